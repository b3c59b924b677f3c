// Kafka transactions with the Java client (kafka-clients 4.x) against a
// real Queen node: initTransactions, commits and aborts over two
// partitions, read_committed against read_uncommitted, a
// consume-transform-produce loop with sendOffsetsToTransaction, a second
// producer with the same transactional id fencing the first, and a
// transaction left open past its timeout aborted by the coordinator. Exits
// non-zero on the first failed check. BOOTSTRAP names the node.

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Transactions {
    static final String BOOTSTRAP = System.getenv("BOOTSTRAP");

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static String name(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static KafkaProducer<String, String> producer(String transactionalId, int timeoutMs) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        return producer;
    }

    static KafkaConsumer<String, String> consumer(String group, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /** Every value a new consumer reads until `want` or three idle seconds. */
    static List<String> read(String topic, String isolation, int want) {
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(name("reader"), isolation)) {
            c.subscribe(List.of(topic));
            long idleSince = System.currentTimeMillis();
            long deadline = idleSince + 60_000;
            while (got.size() < want && System.currentTimeMillis() < deadline
                    && System.currentTimeMillis() - idleSince < 3_000 + (got.isEmpty() ? 10_000 : 0)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.add(r.value());
                    idleSince = System.currentTimeMillis();
                }
            }
        }
        got.sort(null);
        return got;
    }

    static List<String> values(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(prefix + i);
        }
        out.sort(null);
        return out;
    }

    static void commitsAndAborts(Admin admin) throws Exception {
        String topic = name("jtxn");
        admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
        try (KafkaProducer<String, String> p = producer(name("tid"), 60_000)) {
            p.beginTransaction();
            for (int i = 0; i < 20; i++) {
                p.send(new ProducerRecord<>(topic, i % 2, null, "c" + i));
            }
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 20; i++) {
                p.send(new ProducerRecord<>(topic, i % 2, null, "a" + i));
            }
            p.flush();
            p.abortTransaction();
        }
        List<String> committed = read(topic, "read_committed", 20);
        check(committed.equals(values("c", 20)), "read_committed reads the committed records only: " + committed);
        List<String> all = read(topic, "read_uncommitted", 40);
        List<String> want = values("c", 20);
        want.addAll(values("a", 20));
        want.sort(null);
        check(all.equals(want), "read_uncommitted reads the aborted ones too: " + all);
    }

    static void consumeTransformProduce(Admin admin) throws Exception {
        String source = name("jin");
        String sink = name("jout");
        admin.createTopics(List.of(new NewTopic(source, 2, (short) 1), new NewTopic(sink, 2, (short) 1))).all().get();
        try (KafkaProducer<String, String> seed = producer(name("seed"), 60_000)) {
            seed.beginTransaction();
            for (int i = 0; i < 30; i++) {
                seed.send(new ProducerRecord<>(source, i % 2, null, "v" + i));
            }
            seed.commitTransaction();
        }
        String group = name("jcopier");
        int copied = 0;
        try (KafkaConsumer<String, String> c = consumer(group, "read_committed");
                KafkaProducer<String, String> p = producer(name("tid"), 60_000)) {
            c.subscribe(List.of(source));
            long deadline = System.currentTimeMillis() + 60_000;
            while (copied < 30 && System.currentTimeMillis() < deadline) {
                var records = c.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    p.send(new ProducerRecord<>(sink, r.partition(), null, "copy-" + r.value()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                p.commitTransaction();
            }
        }
        check(copied == 30, "copied " + copied + " of 30");
        List<String> out = read(sink, "read_committed", 30);
        List<String> want = new ArrayList<>();
        for (String v : values("v", 30)) {
            want.add("copy-" + v);
        }
        want.sort(null);
        check(out.equals(want), "every input copied once: " + out);
        try (KafkaConsumer<String, String> c = consumer(group, "read_committed")) {
            var committed = c.committed(java.util.Set.of(new TopicPartition(source, 0), new TopicPartition(source, 1)));
            for (var e : committed.entrySet()) {
                check(e.getValue() != null && e.getValue().offset() == 15, "committed " + e);
            }
        }
    }

    static void fencing(Admin admin) throws Exception {
        String topic = name("jfence");
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        String tid = name("tid");
        KafkaProducer<String, String> first = producer(tid, 60_000);
        first.beginTransaction();
        first.send(new ProducerRecord<>(topic, 0, null, "zombie")).get();
        try (KafkaProducer<String, String> second = producer(tid, 60_000)) {
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 0, null, "live"));
            second.commitTransaction();
            boolean fenced = false;
            try {
                first.send(new ProducerRecord<>(topic, 0, null, "more"));
                first.commitTransaction();
            } catch (ProducerFencedException | InvalidProducerEpochException e) {
                fenced = true;
            } catch (KafkaException e) {
                fenced = e.getCause() instanceof ProducerFencedException || e.getCause() instanceof InvalidProducerEpochException;
            }
            check(fenced, "the first producer is fenced by the second");
            first.close(Duration.ZERO);
        }
        check(read(topic, "read_committed", 1).equals(List.of("live")), "only the live producer's record is committed");
    }

    static void timeout(Admin admin) throws Exception {
        String topic = name("jtimeout");
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        String tid = name("tid");
        try (KafkaProducer<String, String> p = producer(tid, 2_000)) {
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "late")).get();
            Thread.sleep(4_000);
            boolean refused = false;
            try {
                p.commitTransaction();
            } catch (KafkaException e) {
                refused = true;
            }
            check(refused, "a commit after the coordinator aborted on timeout is refused");
            boolean listed = false;
            for (TransactionListing t : admin.listTransactions().all().get()) {
                listed |= t.transactionalId().equals(tid) && t.state().toString().equals("CompleteAbort");
            }
            check(listed, "the timed-out transaction is listed as CompleteAbort");
        }
        check(read(topic, "read_committed", 1).isEmpty(), "nothing of the timed-out transaction is committed");
    }

    public static void main(String[] args) throws Exception {
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        try (Admin admin = Admin.create(a)) {
            commitsAndAborts(admin);
            consumeTransformProduce(admin);
            fencing(admin);
            timeout(admin);
        }
        System.out.println("java transactions: all checks passed");
    }
}
