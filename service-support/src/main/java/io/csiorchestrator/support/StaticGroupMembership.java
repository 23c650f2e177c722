package io.csiorchestrator.support;

import io.smallrye.reactive.messaging.ClientCustomizer;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Static consumer-group membership (KIP-345) for every SmallRye Kafka consumer of a service that joins a group:
 * each gets {@code group.instance.id = <instance name>.<channel>} (the channels of one service share a group, so
 * the channel keeps the ids apart). A process that is killed and restarted under the same instance name rejoins
 * as the same member and gets its partitions back at once, without a rebalance and without waiting for the
 * session timeout; a member that does not come back is expired after {@code session.timeout.ms} and its partitions
 * move to the other instances.
 *
 * <p>The instance name: {@value #INSTANCE_NAME} (env {@code CSI_INSTANCE_NAME}; the Kubernetes manifests set it to
 * the pod name) when set, else {@code <host name>-<quarkus.http.port>}: stable across restarts of one process on
 * one host, and different for two processes on one host (they cannot share an HTTP port). Two live processes must
 * never share a name: the broker would fence the older one's consumers. Characters Kafka does not allow in an id
 * (anything but letters, digits, {@code .}, {@code _}, {@code -}) become {@code -}.
 *
 * <p>A channel whose configuration already sets {@code group.instance.id} keeps it; consumers without a
 * {@code group.id} (assigned partitions) and producers are left alone. {@value #ENABLED}{@code =false} turns static
 * membership off (dynamic members: a restarted instance then waits for its old members' session timeout).
 */
@ApplicationScoped
public class StaticGroupMembership implements ClientCustomizer<Map<String, Object>> {

    public static final String INSTANCE_NAME = "csi.instance-name";
    public static final String ENABLED = "csi.kafka.static-membership";
    static final String GROUP_ID = "group.id";
    static final String GROUP_INSTANCE_ID = "group.instance.id";
    static final String VALUE_DESERIALIZER = "value.deserializer";

    private static final Logger LOG = Logger.getLogger(StaticGroupMembership.class);

    private final boolean enabled;
    private final String instanceName;

    @Inject
    public StaticGroupMembership(@ConfigProperty(name = ENABLED, defaultValue = "true") boolean enabled,
            @ConfigProperty(name = INSTANCE_NAME) Optional<String> configured,
            @ConfigProperty(name = "quarkus.http.port", defaultValue = "8080") int httpPort) {
        this.enabled = enabled;
        this.instanceName = sanitized(configured.filter(name -> !name.isBlank()).orElseGet(() -> hostName() + "-" + httpPort));
    }

    @Override
    public Map<String, Object> customize(String channel, Config channelConfig, Map<String, Object> config) {
        if (!enabled || !config.containsKey(GROUP_ID) || !config.containsKey(VALUE_DESERIALIZER) || config.containsKey(GROUP_INSTANCE_ID)) {
            return config;
        }
        Map<String, Object> customized = new HashMap<>(config);
        String id = instanceIdOf(channel);
        customized.put(GROUP_INSTANCE_ID, id);
        LOG.infof("channel %s joins consumer group %s as static member %s", channel, config.get(GROUP_ID), id);
        return customized;
    }

    /** The {@code group.instance.id} of {@code channel}'s consumer. */
    public String instanceIdOf(String channel) {
        return sanitized(instanceName + "." + channel);
    }

    /** {@code name} with every character Kafka does not allow in a group instance id replaced by {@code -}. */
    static String sanitized(String name) {
        return name.replaceAll("[^a-zA-Z0-9._-]", "-");
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return Optional.ofNullable(System.getenv("HOSTNAME")).filter(h -> !h.isBlank()).orElse("localhost");
        }
    }
}
