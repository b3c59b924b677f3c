// The race's topics, made in one Admin call (scripts/race): a JVM start per
// topic with TopicCommand costs seconds each on two cores.
// Usage: java -cp '<kafka jars>/*' CreateTopics.java BOOTSTRAP NAME:PARTITIONS...
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

public class CreateTopics {
    public static void main(String[] args) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            String[] t = args[i].split(":");
            topics.add(new NewTopic(t[0], Integer.parseInt(t[1]), (short) 1));
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            admin.createTopics(topics).all().get();
        }
        System.out.println("created " + topics.size() + " topics");
    }
}
