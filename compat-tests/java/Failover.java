// The Java Kafka client (kafka-clients 4.x) through a leader change on a
// three-node cluster: an idempotent acks=all producer writes half its
// records, prints "half" and waits for a line on stdin (the test kills the
// raft leader meanwhile), writes the rest, and then a consumer group reads
// every record the producer was told is written, at its offset, once.
// BOOTSTRAP names every node; TOPICS, if set, the topics to write across
// (one of its own otherwise). Exits non-zero on the first failed check.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Failover {
    static final String BOOTSTRAP = System.getenv("BOOTSTRAP");
    static final int RECORDS = 300;

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        String given = System.getenv("TOPICS");
        String[] topics = given == null
                ? new String[] {"java-failover-" + UUID.randomUUID().toString().substring(0, 8)}
                : given.split(",");
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "90000");
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        Map<String, String> written = new HashMap<>();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int half = 0; half < 2; half++) {
                Map<String, Future<RecordMetadata>> sent = new HashMap<>();
                for (int i = half * RECORDS / 2; i < (half + 1) * RECORDS / 2; i++) {
                    String v = "v" + i;
                    sent.put(v, p.send(new ProducerRecord<>(topics[i % topics.length], "k" + (i % 5), v)));
                }
                for (Map.Entry<String, Future<RecordMetadata>> e : sent.entrySet()) {
                    RecordMetadata m = e.getValue().get();
                    written.put(e.getKey(), m.topic() + ":" + m.partition() + ":" + m.offset());
                }
                if (half == 0) {
                    System.out.println("half");
                    System.out.flush();
                    check(stdin.readLine() != null, "the test said go");
                }
            }
        }
        check(written.size() == RECORDS, "every record acknowledged: " + written.size());

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "g-" + topics[0]);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<String, String> read = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(topics));
            long deadline = System.currentTimeMillis() + 60_000;
            while (read.size() < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    String at = r.topic() + ":" + r.partition() + ":" + r.offset();
                    check(read.put(r.value(), at) == null, r.value() + " read twice");
                }
            }
        }
        check(read.equals(written), "every acknowledged record at its offset: read " + read.size());
        System.out.println("all checks passed");
    }
}
