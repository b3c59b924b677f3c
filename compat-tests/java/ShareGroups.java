// Kafka 4.4's KafkaShareConsumer (KIP-932) against a real Queen node.
//
// With no arguments, the suite: three share consumers of one group read one
// partition; every record is received once between them; a record released
// is delivered again (delivery count 2); a rejected record is not delivered
// again; a record released at every delivery stops at the group's delivery
// count limit (3 here). The dead-letter queue is checked by the caller over
// HTTP. Exits non-zero on the first failed check; prints "all checks passed".
// With FAILOVER set (BOOTSTRAP names a cluster's nodes), instead: three
// members read while records are produced; once they have read some it
// prints "ready" and waits for a line on stdin (the caller kills the raft
// leader meanwhile); then every record produced must be received, and one
// received twice only at a higher delivery count (its acknowledgement was
// lost with the leader and its lock ran out: at least once, never lost).
//
// Modes for the caller's other tests (BOOTSTRAP names the node):
//   configure GROUP NAME=VALUE...   sets share group configs (Admin API)
//   hold TOPIC GROUP                acquires records, prints "held O,O,..",
//                                   and holds them without acknowledging
//   drain TOPIC GROUP MAX_S IDLE_S [PAUSE_MS]
//                                   reads (accepting) until IDLE_S seconds
//                                   pass with nothing new after a record,
//                                   or MAX_S in all, pausing PAUSE_MS after
//                                   each poll that got records; prints "got
//                                   OFFSET DELIVERY_COUNT VALUE" per record
//   renew TOPIC GROUP SECONDS       one member holds the topic's one record
//                                   for SECONDS by renewing its lock (v2's
//                                   RENEW, record-limit acquire mode) and
//                                   then accepts it, while a second member
//                                   of the group must not get it

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ShareGroups {
    static final String BOOTSTRAP = System.getenv("BOOTSTRAP");
    static final int RECORDS = 300;

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        return Admin.create(p);
    }

    static void configure(String group, Map<String, String> configs) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        try (Admin admin = admin()) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
        }
    }

    static KafkaShareConsumer<String, String> consumer(String group, boolean explicit, int maxPollRecords) {
        return consumer(group, explicit, maxPollRecords, new Properties());
    }

    static KafkaShareConsumer<String, String> consumer(String group, boolean explicit, int maxPollRecords, Properties p) {
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(maxPollRecords));
        p.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        return new KafkaShareConsumer<>(p);
    }

    static void produce(String topic, Collection<String> values) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (String v : values) {
                producer.send(new ProducerRecord<>(topic, 0, null, v)).get();
            }
        }
    }

    static int count(ConsumerRecord<String, String> r) {
        return r.deliveryCount().map(Short::intValue).orElse(-1);
    }

    /// One delivery: who got the record, at which delivery count.
    record Delivery(String member, int count) {}

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            switch (args[0]) {
                case "configure" -> {
                    Map<String, String> configs = new HashMap<>();
                    for (int i = 2; i < args.length; i++) {
                        String[] kv = args[i].split("=", 2);
                        configs.put(kv[0], kv[1]);
                    }
                    configure(args[1], configs);
                    System.out.println("configured");
                }
                case "hold" -> hold(args[1], args[2]);
                case "drain" -> drain(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                        args.length > 5 ? Integer.parseInt(args[5]) : 0);
                case "renew" -> renew(args[1], args[2], Integer.parseInt(args[3]));
                default -> throw new IllegalArgumentException("unknown mode " + args[0]);
            }
            return;
        }
        if (System.getenv("FAILOVER") != null) {
            failover();
        } else {
            suite();
        }
    }

    /// Three members accepting every record they get, each delivery noted.
    static List<Thread> members(String topic, String group, ConcurrentHashMap<String, List<Delivery>> deliveries,
            AtomicBoolean running, List<Throwable> errors) {
        List<Thread> threads = new ArrayList<>();
        for (int m = 0; m < 3; m++) {
            String name = "member-" + m;
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = consumer(group, false, 10)) {
                    c.subscribe(List.of(topic));
                    while (running.get()) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            deliveries.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(new Delivery(name, count(r)));
                        }
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        return threads;
    }

    static void failover() throws Exception {
        String topic = "share-failover-" + UUID.randomUUID();
        String group = "share-failover-" + UUID.randomUUID();
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        configure(group, Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "5000"));
        List<String> first = new ArrayList<>();
        List<String> second = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            first.add("f" + i);
            second.add("s" + i);
        }
        produce(topic, first);
        ConcurrentHashMap<String, List<Delivery>> deliveries = new ConcurrentHashMap<>();
        AtomicBoolean running = new AtomicBoolean(true);
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        List<Thread> threads = members(topic, group, deliveries, running, errors);
        long deadline = System.currentTimeMillis() + 60_000;
        while (deliveries.size() < 50 && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        check(deliveries.size() >= 50, "the members read " + deliveries.size() + " records in a minute");
        System.out.println("ready");
        System.out.flush();
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        produce(topic, second);
        List<String> all = new ArrayList<>(first);
        all.addAll(second);
        deadline = System.currentTimeMillis() + 150_000;
        while (System.currentTimeMillis() < deadline && errors.isEmpty() && !all.stream().allMatch(deliveries::containsKey)) {
            Thread.sleep(100);
        }
        Thread.sleep(2000);
        running.set(false);
        for (Thread t : threads) {
            t.join(30_000);
        }
        check(errors.isEmpty(), "a member failed: " + errors);
        int again = 0;
        for (String v : all) {
            List<Delivery> d = deliveries.get(v);
            check(d != null, v + " was never delivered");
            for (int i = 1; i < d.size(); i++) {
                check(d.get(i).count() > d.get(i - 1).count(), v + " was delivered twice at one delivery count: " + d);
            }
            again += d.size() - 1;
        }
        System.out.println("delivered again after the failover: " + again);
        System.out.println("all checks passed");
    }

    static void renew(String topic, String group, int seconds) throws Exception {
        Properties p = new Properties();
        p.put("share.acquire.mode", "record_limit");
        AtomicBoolean running = new AtomicBoolean(true);
        List<String> stolen = new CopyOnWriteArrayList<>();
        Thread other = new Thread(() -> {
            try (KafkaShareConsumer<String, String> c = consumer(group, false, 10)) {
                c.subscribe(List.of(topic));
                while (running.get()) {
                    c.poll(Duration.ofMillis(200)).forEach(r -> stolen.add(r.value()));
                }
            }
        });
        try (KafkaShareConsumer<String, String> c = consumer(group, true, 1, p)) {
            c.subscribe(List.of(topic));
            long first = 0;
            int renewals = 0;
            boolean accepted = false;
            long deadline = System.currentTimeMillis() + 60_000 + seconds * 1000L;
            while (!accepted && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    check(count(r) == 1, "the renewed record came at delivery count " + count(r));
                    if (first == 0) {
                        first = System.currentTimeMillis();
                        other.start();
                    }
                    if (System.currentTimeMillis() - first < seconds * 1000L) {
                        c.acknowledge(r, AcknowledgeType.RENEW);
                        renewals++;
                    } else {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted = true;
                    }
                }
                c.commitSync();
                if (first != 0) {
                    Thread.sleep(500);
                }
            }
            check(accepted, "the record was never accepted");
            System.out.println("renewed " + renewals + " times over " + seconds + " s");
        }
        Thread.sleep(2000);
        running.set(false);
        other.join(30_000);
        check(stolen.isEmpty(), "another member got the held record: " + stolen);
        System.out.println("all checks passed");
    }

    static void hold(String topic, String group) throws Exception {
        try (KafkaShareConsumer<String, String> c = consumer(group, true, 5)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                List<String> held = new ArrayList<>();
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    held.add(String.valueOf(r.offset()));
                }
                if (!held.isEmpty()) {
                    System.out.println("held " + String.join(",", held));
                    System.out.flush();
                    Thread.sleep(600_000);
                }
            }
            throw new AssertionError("nothing to hold within a minute");
        }
    }

    static void drain(String topic, String group, int maxSeconds, int idleSeconds, int pauseMs) throws InterruptedException {
        try (KafkaShareConsumer<String, String> c = consumer(group, false, 50)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + maxSeconds * 1000L;
            long lastRecord = 0;
            while (System.currentTimeMillis() < end) {
                var records = c.poll(Duration.ofMillis(300));
                for (ConsumerRecord<String, String> r : records) {
                    System.out.println("got " + r.offset() + " " + count(r) + " " + r.value());
                    lastRecord = System.currentTimeMillis();
                }
                System.out.flush();
                if (!records.isEmpty() && pauseMs > 0) {
                    Thread.sleep(pauseMs);
                }
                if (lastRecord > 0 && System.currentTimeMillis() - lastRecord > idleSeconds * 1000L) {
                    break;
                }
            }
            c.commitSync();
        }
    }

    static void suite() throws Exception {
        String topic = "share-" + UUID.randomUUID();
        String group = "share-group-" + UUID.randomUUID();
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        configure(group, Map.of(
                "share.auto.offset.reset", "earliest",
                "share.delivery.count.limit", "3",
                "share.record.lock.duration.ms", "5000"));
        List<String> values = new ArrayList<>();
        for (int i = 0; i < RECORDS; i++) {
            values.add("r" + i);
        }
        values.addAll(List.of("release-me", "reject-me", "poison"));
        Collections.shuffle(values);
        produce(topic, values);

        ConcurrentHashMap<String, List<Delivery>> deliveries = new ConcurrentHashMap<>();
        AtomicBoolean running = new AtomicBoolean(true);
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int m = 0; m < 3; m++) {
            String name = "member-" + m;
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = consumer(group, true, 10)) {
                    c.subscribe(List.of(topic));
                    while (running.get()) {
                        var records = c.poll(Duration.ofMillis(200));
                        for (ConsumerRecord<String, String> r : records) {
                            int n = count(r);
                            deliveries.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(new Delivery(name, n));
                            AcknowledgeType type = switch (r.value()) {
                                case "release-me" -> n == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                                case "reject-me" -> AcknowledgeType.REJECT;
                                case "poison" -> AcknowledgeType.RELEASE;
                                default -> AcknowledgeType.ACCEPT;
                            };
                            c.acknowledge(r, type);
                        }
                        if (!records.isEmpty()) {
                            c.commitSync();
                        }
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline && errors.isEmpty()) {
            boolean all = values.stream().allMatch(deliveries::containsKey);
            boolean released = deliveries.getOrDefault("release-me", List.of()).size() >= 2;
            boolean poisoned = deliveries.getOrDefault("poison", List.of()).size() >= 3;
            if (all && released && poisoned) {
                break;
            }
            Thread.sleep(100);
        }
        // Long enough for a record delivered twice by mistake to show.
        Thread.sleep(3000);
        running.set(false);
        for (Thread t : threads) {
            t.join(30_000);
        }
        check(errors.isEmpty(), "a consumer failed: " + errors);
        Map<String, Integer> perMember = new HashMap<>();
        for (int i = 0; i < RECORDS; i++) {
            List<Delivery> d = deliveries.get("r" + i);
            check(d != null, "r" + i + " was never delivered");
            check(d.size() == 1, "r" + i + " was delivered " + d.size() + " times: " + d);
            check(d.get(0).count() == 1, "r" + i + " came at delivery count " + d.get(0).count());
            perMember.merge(d.get(0).member(), 1, Integer::sum);
        }
        check(perMember.size() >= 2, "one member took every record: " + perMember);
        List<Delivery> released = deliveries.get("release-me");
        check(released != null && released.size() == 2, "the released record was delivered " + released);
        check(released.get(0).count() == 1 && released.get(1).count() == 2, "release-me's counts: " + released);
        List<Delivery> rejected = deliveries.get("reject-me");
        check(rejected != null && rejected.size() == 1, "the rejected record was delivered " + rejected);
        List<Delivery> poison = deliveries.get("poison");
        check(poison != null && poison.size() == 3, "the poison record was delivered " + poison + ", not 3 times");
        for (int i = 0; i < 3; i++) {
            check(poison.get(i).count() == i + 1, "poison's delivery counts: " + poison);
        }
        System.out.println("topic " + topic);
        System.out.println("group " + group);
        System.out.println("per member " + perMember);
        System.out.println("all checks passed");
    }
}
