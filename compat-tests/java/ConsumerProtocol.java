// The Java consumer with group.protocol=consumer (KIP-848) against a real
// Queen node: a group of three grows to four and shrinks to two while a
// producer writes; every record produced is consumed, exactly once (each
// consumer commits what it processed before it gives a partition up), the
// group's committed offsets reach the end of every partition, and no
// partition is ever owned by two members at once, as the consumers' own
// rebalance callbacks see it. Exits non-zero on the first failed check.
// BOOTSTRAP names the node; GROUP_PROTOCOL_ASSIGNOR picks the server-side
// assignor (uniform by default). With FAILOVER set (a cluster), once the
// three own every partition it prints "ready" and waits for a line on
// stdin (the test kills the raft leader meanwhile): the group carries on
// under the new leader with the same members, and a record may then be
// consumed twice (one processed whose commit the kill lost), never lost.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ConsumerProtocol {
    static final String BOOTSTRAP = System.getenv("BOOTSTRAP");
    static final int PARTITIONS = 6;
    static final String TOPIC = "kip848-" + UUID.randomUUID();
    static final String GROUP = "kip848-group-" + UUID.randomUUID();

    /// Who owns each partition, as the owners' callbacks say.
    static final ConcurrentHashMap<TopicPartition, String> OWNERS = new ConcurrentHashMap<>();
    /// Every record processed, by "partition/offset", and by whom.
    static final ConcurrentHashMap<String, String> CONSUMED = new ConcurrentHashMap<>();
    static final AtomicReference<String> FAILED = new AtomicReference<>();
    static final boolean FAILOVER = System.getenv("FAILOVER") != null;
    static final AtomicLong TWICE = new AtomicLong();

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void fail(String what) {
        FAILED.compareAndSet(null, what);
    }

    /// One member: polls, processes, commits what it processed before each
    /// poll and before giving partitions up.
    static class Member implements Runnable {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
        final AtomicBoolean running = new AtomicBoolean(true);
        final Thread thread;

        Member(String name) {
            this.name = name;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            String assignor = System.getenv().getOrDefault("GROUP_PROTOCOL_ASSIGNOR", "uniform");
            p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            consumer = new KafkaConsumer<>(p);
            thread = new Thread(this, name);
        }

        void commit() {
            if (!done.isEmpty()) {
                consumer.commitSync(done);
                done.clear();
            }
        }

        public void run() {
            consumer.subscribe(List.of(TOPIC), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    commit();
                    for (TopicPartition tp : revoked) {
                        OWNERS.remove(tp, name);
                    }
                }

                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    for (TopicPartition tp : assigned) {
                        String before = OWNERS.putIfAbsent(tp, name);
                        if (before != null && !before.equals(name)) {
                            fail(tp + " was given to " + name + " while " + before + " owned it");
                        }
                    }
                }

                public void onPartitionsLost(Collection<TopicPartition> lost) {
                    for (TopicPartition tp : lost) {
                        OWNERS.remove(tp, name);
                    }
                }
            });
            try {
                while (running.get()) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        if (!name.equals(OWNERS.get(tp))) {
                            fail(name + " read " + tp + " which it does not own (" + OWNERS.get(tp) + " does)");
                        }
                        String before = CONSUMED.putIfAbsent(r.partition() + "/" + r.offset(), name);
                        if (before != null && FAILOVER) {
                            TWICE.incrementAndGet();
                        } else if (before != null) {
                            fail(r.partition() + "/" + r.offset() + " consumed twice: by " + before + " and " + name);
                        }
                        done.put(tp, new OffsetAndMetadata(r.offset() + 1));
                    }
                    commit();
                }
                commit();
            } catch (WakeupException e) {
                // closing
            } catch (Exception e) {
                fail(name + ": " + e);
            } finally {
                consumer.close();
            }
        }

        void stop() throws InterruptedException {
            running.set(false);
            thread.join(60_000);
            check(!thread.isAlive(), name + " did not close");
        }
    }

    /// Waits until `members` own every partition between them, each some.
    static void waitOwned(List<Member> members, String when) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            check(FAILED.get() == null, FAILED.get());
            Set<String> owners = Set.copyOf(OWNERS.values());
            boolean allOwned = OWNERS.size() == PARTITIONS;
            boolean each = members.stream().allMatch(m -> owners.contains(m.name));
            if (allOwned && each && owners.size() == members.size()) {
                System.out.println(when + ": " + OWNERS);
                // The group works a while like this, under load.
                int before = CONSUMED.size();
                Thread.sleep(1500);
                long until = System.currentTimeMillis() + 30_000;
                while (CONSUMED.size() <= before && System.currentTimeMillis() < until) {
                    Thread.sleep(100);
                }
                check(CONSUMED.size() > before, when + ": nothing consumed in 30 s");
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError(when + ": the partitions were not spread over " + members.size() + " members: " + OWNERS);
    }

    public static void main(String[] args) throws Exception {
        try {
            run();
        } catch (Throwable e) {
            e.printStackTrace();
            // The members' and the producer's threads would keep the JVM up.
            System.exit(1);
        }
        System.exit(0);
    }

    static void run() throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();

            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            AtomicLong produced = new AtomicLong();
            AtomicBoolean producing = new AtomicBoolean(true);
            Thread producer = new Thread(() -> {
                try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                    long n = 0;
                    while (producing.get()) {
                        p.send(new ProducerRecord<>(TOPIC, (int) (n % PARTITIONS), "k" + n, "v" + n)).get();
                        produced.incrementAndGet();
                        n++;
                        if (n % 20 == 0) {
                            Thread.sleep(10);
                        }
                    }
                } catch (Exception e) {
                    fail("producer: " + e);
                }
            });
            producer.start();

            List<Member> members = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                members.add(new Member("m" + i));
            }
            members.forEach(m -> m.thread.start());
            waitOwned(members, "three members");
            if (FAILOVER) {
                System.out.println("ready");
                System.out.flush();
                new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
                waitOwned(members, "three members under the new leader");
            }

            ConsumerGroupDescription described =
                admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
            check(described.type() == GroupType.CONSUMER, "the group is a consumer-protocol group: " + described);
            check(described.members().size() == 3, "three members described: " + described);

            Member fourth = new Member("m4");
            members.add(fourth);
            fourth.thread.start();
            waitOwned(members, "four members");

            for (Member leaving : List.of(members.get(0), members.get(1))) {
                leaving.stop();
            }
            List<Member> stayers = new ArrayList<>(members.subList(2, 4));
            waitOwned(stayers, "two members");

            producing.set(false);
            producer.join();
            long deadline = System.currentTimeMillis() + 60_000;
            while (CONSUMED.size() < produced.get() && System.currentTimeMillis() < deadline) {
                check(FAILED.get() == null, FAILED.get());
                Thread.sleep(100);
            }
            for (Member m : stayers) {
                m.stop();
            }
            check(FAILED.get() == null, FAILED.get());
            check(CONSUMED.size() == produced.get(),
                "every record consumed: " + CONSUMED.size() + " of " + produced.get());

            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(TOPIC, p), OffsetSpec.latest());
            }
            var ends = admin.listOffsets(latest).all().get();
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();
            for (var end : ends.entrySet()) {
                OffsetAndMetadata c = committed.get(end.getKey());
                check(c != null && c.offset() == end.getValue().offset(),
                    end.getKey() + " committed " + c + ", its end is " + end.getValue().offset());
            }
            System.out.println("produced and consumed " + produced.get() + " records over 6 partitions, "
                + TWICE.get() + " of them twice");
        }
        System.out.println("all checks passed");
    }
}
