// A Kafka Streams word count (as Kafka's own WordCountDemo) run against a
// real Queen node: lines from INPUT are split into words, grouped through a
// repartition topic and counted in a state store backed by a changelog, and
// each word's running count goes to OUTPUT. Runs until killed.
// Environment: BOOTSTRAP, APP_ID, GUARANTEE (exactly_once_v2 or
// at_least_once), INPUT, OUTPUT, STATE_DIR.

import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Produced;

public class WordCount {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, System.getenv("APP_ID"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, System.getenv("BOOTSTRAP"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, System.getenv("GUARANTEE"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, System.getenv("STATE_DIR"));
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put("consumer.auto.offset.reset", "earliest");
        p.put("consumer.session.timeout.ms", 10_000);
        p.put("consumer.heartbeat.interval.ms", 1_000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(System.getenv("INPUT"))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word)
                .count()
                .toStream()
                .to(System.getenv("OUTPUT"), Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                    .SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        stopped.await();
        System.exit(1);
    }
}
