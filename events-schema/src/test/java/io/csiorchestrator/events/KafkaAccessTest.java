package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.events.KafkaAccess.Grant;
import io.csiorchestrator.events.KafkaAccess.Principal;

/** The ACL table: least privilege per role, no wildcard, and the rows each service needs. */
class KafkaAccessTest {

    private static final TopicCatalog TOPICS = new TopicCatalog("p.");

    private static final List<Principal> EVERY_ROLE = List.of(Principal.claimService(), Principal.pluginRegistry(),
        Principal.node("node-1"), Principal.scheduler("nomad-1"), Principal.operator(), Principal.bench(),
        Principal.simulator());

    /** Every role has rows; none is a wildcard, and only READ, WRITE and CREATE are ever granted. */
    @Test
    void everyRoleHasRowsAndNoneIsAWildcardOrABroadOperation() {
        for (Principal principal : EVERY_ROLE) {
            List<AclBinding> bindings = KafkaAccess.bindings(principal, TOPICS);
            assertFalse(bindings.isEmpty(), principal.name());
            for (AclBinding b : bindings) {
                assertFalse(b.pattern().name().equals("*") || b.pattern().patternType() == PatternType.MATCH
                    || b.pattern().patternType() == PatternType.ANY, principal.name() + ": " + b);
                assertTrue(KafkaAccess.OPERATIONS.contains(b.entry().operation()), principal.name() + ": " + b);
                assertEquals("User:" + principal.name(), b.entry().principal());
                assertEquals("*", b.entry().host());
                assertFalse(b.pattern().resourceType() == ResourceType.CLUSTER, principal.name() + ": " + b);
            }
        }
        assertThrows(IllegalArgumentException.class,
            () -> new Grant(ResourceType.TOPIC, PatternType.LITERAL, "*", AclOperation.READ));
    }

    /** A node writes its own topics and reads its commands in its own group, never claim-requested or node-commands. */
    @Test
    void nodeMayWriteItsTopicsButNeverClaimsOrCommands() {
        List<Grant> node = KafkaAccess.grants(Principal.node("node-1"), TOPICS);
        Set<String> writes = topics(node, AclOperation.WRITE);
        assertEquals(Set.of("p.mount-done", "p.plugin-health", "p.node-events", "p.node-state", "p.node-lease-requests",
            "p.node-commands-dead-letter"), writes);
        assertEquals(Set.of("p.node-commands", "p.node-leases"), topics(node, AclOperation.READ));
        assertEquals(List.of(new Grant(ResourceType.GROUP, PatternType.LITERAL, "node-mount-worker-node-1", AclOperation.READ)),
            node.stream().filter(g -> g.type() == ResourceType.GROUP).toList());
        assertTrue(topics(node, AclOperation.CREATE).isEmpty());
    }

    /**
     * A scheduler writes claim-requested and reads claim-status and volume-status (the results of creates and deletes,
     * issue 14), nothing else; its groups start with its name and a separator.
     */
    @Test
    void schedulerWritesClaimsAndReadsStatusOnly() {
        List<Grant> scheduler = KafkaAccess.grants(Principal.scheduler("nomad-1"), TOPICS);
        assertEquals(Set.of("p.claim-requested"), topics(scheduler, AclOperation.WRITE));
        assertEquals(Set.of("p.claim-status", "p.volume-status", "p.placement"), topics(scheduler, AclOperation.READ));
        assertEquals(List.of(new Grant(ResourceType.GROUP, PatternType.PREFIXED, "scheduler-nomad-1-", AclOperation.READ)),
            scheduler.stream().filter(g -> g.type() == ResourceType.GROUP).toList());
    }

    /**
     * Every prefix ACL ends with the separator (issue 33): a principal's prefix never covers the groups of another whose
     * name extends its own ({@code scheduler-acme} and {@code scheduler-acme2}).
     */
    @Test
    void everyPrefixEndsWithTheSeparator() {
        for (Principal principal : EVERY_ROLE) {
            for (Grant g : KafkaAccess.grants(principal, TOPICS)) {
                if (g.pattern() == PatternType.PREFIXED) {
                    assertTrue(g.name().endsWith(KafkaAccess.GROUP_SEPARATOR), principal.name() + ": " + g);
                }
            }
        }
    }

    /**
     * The operator (the CLI: {@code volume claim}, {@code events}, {@code chaos}) writes claim-requested only and reads the
     * status topics (volume-status for {@code events}), node-leases included ({@code ./csi chaos} checks the grants and
     * lapses), in no group.
     */
    @Test
    void operatorWritesClaimsAndReadsTheStatusTopicsAndLeases() {
        List<Grant> operator = KafkaAccess.grants(Principal.operator(), TOPICS);
        assertEquals(Set.of("p.claim-requested"), topics(operator, AclOperation.WRITE));
        assertEquals(Set.of("p.claim-status", "p.node-events", "p.plugin-status", "p.node-leases", "p.volume-status",
                "p.placement"), topics(operator, AclOperation.READ));
        assertTrue(operator.stream().noneMatch(g -> g.type() == ResourceType.GROUP));
    }

    /**
     * claim-service alone writes node-commands, claim-status and volume-status; the registry alone plugin-status and
     * node-leases.
     */
    @Test
    void onlyTheOwningServiceWritesCommandsStatusAndLeases() {
        for (Principal principal : EVERY_ROLE) {
            Set<String> writes = topics(KafkaAccess.grants(principal, TOPICS), AclOperation.WRITE);
            assertEquals(principal.role() == KafkaAccess.Role.CLAIM_SERVICE, writes.contains("p.node-commands"), principal.name());
            assertEquals(principal.role() == KafkaAccess.Role.CLAIM_SERVICE, writes.contains("p.claim-status"), principal.name());
            assertEquals(principal.role() == KafkaAccess.Role.CLAIM_SERVICE, writes.contains("p.volume-status"), principal.name());
            assertEquals(principal.role() == KafkaAccess.Role.CLAIM_SERVICE, writes.contains("p.placement"), principal.name());
            assertEquals(principal.role() == KafkaAccess.Role.PLUGIN_REGISTRY, writes.contains("p.plugin-status"), principal.name());
            assertEquals(principal.role() == KafkaAccess.Role.PLUGIN_REGISTRY, writes.contains("p.node-leases"), principal.name());
        }
    }

    /** A node or scheduler id that is not path-safe cannot become a principal. */
    @Test
    void idsAreValidated() {
        assertThrows(IllegalArgumentException.class, () -> Principal.node("../x"));
        assertThrows(IllegalArgumentException.class, () -> Principal.scheduler("a b"));
        assertEquals("User:csi-kafka-broker;User:csi-admin", KafkaAccess.superUsers());
    }

    private static Set<String> topics(List<Grant> grants, AclOperation operation) {
        return grants.stream().filter(g -> g.type() == ResourceType.TOPIC && g.operation() == operation)
            .map(Grant::name).collect(Collectors.toSet());
    }
}
