// The Java Kafka client (kafka-clients 4.x) against a real Queen node:
// the producer with its default idempotence, a consumer group that commits
// and resumes, and the admin client. Exits non-zero on the first failed
// check. BOOTSTRAP names the node.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Suite {
    static final String BOOTSTRAP = System.getenv("BOOTSTRAP");

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static List<ConsumerRecord<String, String>> consume(String topic, String group, int want) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (got.size() < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (got.size() < want) {
                        got.add(r);
                        c.commitSync(Map.of(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1)));
                    }
                }
            }
        }
        return got;
    }

    public static void main(String[] args) throws Exception {
        String topic = "java-" + UUID.randomUUID().toString().substring(0, 8);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            check(partitions == 3, "three partitions after growing, saw " + partitions);
            check(admin.describeCluster().nodes().get().size() == 1, "one broker");
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            var config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            check("delete".equals(config.get("cleanup.policy").value()), "cleanup.policy is delete");

            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 10; i++) {
                    RecordMetadata m = producer.send(new ProducerRecord<>(topic, 0, "k", "v" + i)).get();
                    check(m.offset() == i, "offset " + i + " answered " + m.offset());
                }
            }

            String group = "g-" + UUID.randomUUID().toString().substring(0, 6);
            List<ConsumerRecord<String, String>> first = consume(topic, group, 6);
            check(first.size() == 6, "first consumer read 6, got " + first.size());
            for (int i = 0; i < 6; i++) {
                check(first.get(i).offset() == i && ("v" + i).equals(first.get(i).value()), "record " + i);
            }
            List<ConsumerRecord<String, String>> rest = consume(topic, group, 4);
            check(rest.size() == 4 && rest.get(0).offset() == 6, "second consumer resumes at 6");

            var committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(committed.get(new TopicPartition(topic, 0)).offset() == 10, "committed offset 10");
            var latest = admin.listOffsets(Map.of(new TopicPartition(topic, 0), OffsetSpec.latest())).all().get();
            check(latest.get(new TopicPartition(topic, 0)).offset() == 10, "latest offset 10");
            check(admin.listGroups().all().get().stream().anyMatch(g -> g.groupId().equals(group)), "group listed");

            admin.deleteTopics(List.of(topic)).all().get();
            Set<String> names = admin.listTopics().names().get();
            check(!names.contains(topic), "topic deleted");
        }
        System.out.println("java kafka-clients: all checks passed");
    }
}
