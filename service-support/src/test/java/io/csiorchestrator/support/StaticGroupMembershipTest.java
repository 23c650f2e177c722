package io.csiorchestrator.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class StaticGroupMembershipTest {

    private static final Map<String, Object> CONSUMER = Map.of("group.id", "claim-service",
            "value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");

    @Test
    void aGroupConsumerJoinsAsTheStaticMemberInstanceNameDotChannel() {
        StaticGroupMembership membership = new StaticGroupMembership(true, Optional.of("claims-0"), 8081);
        Map<String, Object> config = membership.customize("claim-requested", null, CONSUMER);
        assertEquals("claims-0.claim-requested", config.get("group.instance.id"));
        assertEquals("claim-service", config.get("group.id"), "the rest of the configuration is kept");
        assertEquals("claims-0.mount-done", membership.customize("mount-done", null, CONSUMER).get("group.instance.id"),
                "two channels of one group never share an id");
    }

    @Test
    void withoutANameTheHostAndHttpPortMakeIt() {
        String id = (String) new StaticGroupMembership(true, Optional.empty(), 8082)
                .customize("plugin-health", null, CONSUMER).get("group.instance.id");
        assertEquals(true, id.endsWith("-8082.plugin-health"), id);
        assertEquals(id, new StaticGroupMembership(true, Optional.of(" "), 8082).customize("plugin-health", null, CONSUMER)
                .get("group.instance.id"), "a blank name counts as none");
    }

    @Test
    void charactersKafkaRefusesInAnIdBecomeDashes() {
        assertEquals("pod-7_x.y-z.claim-requested", new StaticGroupMembership(true, Optional.of("pod/7_x.y:z"), 8081)
                .customize("claim-requested", null, CONSUMER).get("group.instance.id"));
    }

    @Test
    void producersAssignedConsumersAnExplicitIdAndTheSwitchOffAreLeftAlone() {
        StaticGroupMembership membership = new StaticGroupMembership(true, Optional.of("claims-0"), 8081);
        // A producer, even one whose configuration carries a group.id.
        Map<String, Object> producer = Map.of("group.id", "claim-service",
                "value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        assertEquals(producer, membership.customize("plugin-status", null, producer));
        Map<String, Object> assigned = Map.of("value.deserializer", "x");
        assertEquals(assigned, membership.customize("node-commands", null, assigned));
        Map<String, Object> explicit = Map.of("group.id", "g", "value.deserializer", "x", "group.instance.id", "mine");
        assertEquals(explicit, membership.customize("claim-requested", null, explicit));
        assertFalse(new StaticGroupMembership(false, Optional.of("claims-0"), 8081).customize("claim-requested", null, CONSUMER)
                .containsKey("group.instance.id"));
    }
}
