// kafkajs against a real Queen node: produce (plain and idempotent), a
// consumer group that commits and resumes, and the admin client. Exits
// non-zero on the first failed check. BOOTSTRAP names the node.
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const { Kafka, logLevel } = require("kafkajs");

const kafka = new Kafka({ clientId: "queen-compat", brokers: [process.env.BOOTSTRAP], logLevel: logLevel.NOTHING });
const name = (prefix) => `${prefix}-${crypto.randomBytes(4).toString("hex")}`;

async function consume(topic, groupId, want) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${got.length} of ${want}`)), 30000);
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (got.length >= want) return;
        got.push([partition, Number(message.offset), message.value.toString()]);
        await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
        if (got.length === want) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  return got;
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  const topic = name("kjs");
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] }), true);
  const listed = await admin.fetchTopicMetadata({ topics: [topic] });
  assert.equal(listed.topics[0].partitions.length, 2);
  await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
  const grown = await admin.fetchTopicMetadata({ topics: [topic] });
  assert.equal(grown.topics[0].partitions.length, 3);

  const plain = kafka.producer();
  await plain.connect();
  const sent = await plain.send({ topic, messages: [0, 1, 2].map((i) => ({ partition: 0, value: `plain-${i}` })) });
  assert.equal(sent[0].baseOffset, "0");
  await plain.disconnect();

  const idempotent = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await idempotent.connect();
  const again = await idempotent.send({ topic, messages: [3, 4].map((i) => ({ partition: 0, value: `idem-${i}` })) });
  assert.equal(again[0].baseOffset, "3");
  await idempotent.disconnect();

  const group = name("g");
  const first = await consume(topic, group, 3);
  assert.deepEqual(first, [[0, 0, "plain-0"], [0, 1, "plain-1"], [0, 2, "plain-2"]]);
  const rest = await consume(topic, group, 2);
  assert.deepEqual(rest, [[0, 3, "idem-3"], [0, 4, "idem-4"]]);

  const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  assert.equal(offsets[0].partitions.find((p) => p.partition === 0).offset, "5");
  const groups = await admin.listGroups();
  assert.ok(groups.groups.some((g) => g.groupId === group));

  await admin.deleteTopics({ topics: [topic] });
  const left = await admin.listTopics();
  assert.ok(!left.includes(topic));
  await admin.disconnect();
  console.log("kafkajs: all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
