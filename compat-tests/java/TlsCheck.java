// The Java Kafka client over TLS (security.protocol SSL) against a Queen
// node with QUEEN_KAFKA_TLS on: trusting the test's CA (a PEM trust store)
// it produces and reads the cluster; trusting another CA it is refused.
// BOOTSTRAP names the node, TRUSTED_CA and OTHER_CA the two CA files.

import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.serialization.StringSerializer;

public class TlsCheck {
    static Properties over(String ca) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, System.getenv("BOOTSTRAP"));
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, ca);
        return p;
    }

    public static void main(String[] args) throws Exception {
        Properties pp = over(System.getenv("TRUSTED_CA"));
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        String topic = "java-tls-" + UUID.randomUUID().toString().substring(0, 8);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            long offset = producer.send(new ProducerRecord<>(topic, "k", "over tls")).get(60, TimeUnit.SECONDS).offset();
            if (offset != 0) {
                throw new AssertionError("first offset " + offset);
            }
        }
        try (Admin admin = Admin.create(over(System.getenv("OTHER_CA")))) {
            admin.describeCluster(new DescribeClusterOptions().timeoutMs(20_000)).nodes().get();
            throw new AssertionError("a client trusting another CA was served");
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof SslAuthenticationException)) {
                throw new AssertionError("expected an SSL authentication failure, got " + e.getCause());
            }
        }
        System.out.println("java kafka-clients over TLS: all checks passed");
    }
}
