package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import java.io.IOException;
import java.io.InputStream;
import org.junit.jupiter.api.Test;

/** The node lease contract of issue 19: the two lease events, and the fencing fields on the older events. */
class NodeLeaseContractTest {

    private static final JsonSchemaFactory FACTORY = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);

    private static JsonSchema schema(EventType type) {
        try (InputStream in = EventType.class.getResourceAsStream(type.schemaResource())) {
            return FACTORY.getSchema(in, SchemaValidatorsConfig.builder().formatAssertionsEnabled(true).build());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ObjectNode json(ContractEvent event) {
        return (ObjectNode) EventCodec.mapper().valueToTree(event);
    }

    /** Both the JSON Schema and the codec refuse {@code json} as an event of {@code type}. */
    private static void bothRefuse(EventType type, ObjectNode json, String why) {
        assertFalse(schema(type).validate(json).isEmpty(), "schema accepted " + why);
        assertThrows(MalformedEventException.class, () -> EventCodec.decode(type, json.toString().getBytes()),
                "codec accepted " + why);
    }

    @Test
    void theLeaseTopicsAndTypesAreNamedAsTheDesignSays() {
        assertEquals("node-lease-requests", Topic.NODE_LEASE_REQUESTS.baseName());
        assertEquals("node-leases", Topic.NODE_LEASES.baseName());
        assertEquals(6, Topic.NODE_LEASE_REQUESTS.defaultPartitions());
        assertEquals(6, Topic.NODE_LEASES.defaultPartitions());
        assertFalse(Topic.NODE_LEASE_REQUESTS.compacted());
        assertTrue(Topic.NODE_LEASES.compacted());
        assertEquals(EventType.NODE_LEASE_REQUESTED, EventType.forTopic(Topic.NODE_LEASE_REQUESTS));
        assertEquals(EventType.NODE_LEASE, EventType.forTopic(Topic.NODE_LEASES));
        assertEquals(EventType.NODE_LEASE, EventType.forCloudEventType("io.csiorchestrator.node.lease.v1"));
    }

    @Test
    void aLapseNeedsNoRequestIdAndRoundTrips() {
        NodeLease lapse = new NodeLease("node-1", 3L, NodeLeaseState.LAPSED, null, 30_000L, 10_000L, SampleEvents.T);
        assertEquals(lapse, EventCodec.decode(NodeLease.class, EventCodec.encode(lapse)));
        assertTrue(schema(EventType.NODE_LEASE).validate(json(lapse)).isEmpty());
        assertFalse(lapse.valid());
        assertTrue(SampleEvents.nodeLease().valid());
    }

    @Test
    void aLeaseWithEpochZeroAnUnknownStateOrABudgetNotBelowTheTtlIsRefused() {
        ObjectNode zero = json(SampleEvents.nodeLease());
        zero.put("epoch", 0);
        bothRefuse(EventType.NODE_LEASE, zero, "epoch 0");
        ObjectNode unknown = json(SampleEvents.nodeLease());
        unknown.put("state", "expired");
        bothRefuse(EventType.NODE_LEASE, unknown, "state 'expired'");
        ObjectNode noTtl = json(SampleEvents.nodeLease());
        noTtl.remove("ttlMillis");
        bothRefuse(EventType.NODE_LEASE, noTtl, "a lease without ttlMillis");

        MalformedEventException budget = assertThrows(MalformedEventException.class, () -> EventCodec.decode(
                NodeLease.class, EventCodec.encode(new NodeLease("node-1", 1L, NodeLeaseState.VALID, "r", 10_000L,
                        10_000L, SampleEvents.T))));
        assertTrue(budget.getMessage().contains("fenceBudgetMillis"), budget.getMessage());
    }

    @Test
    void aLeaseRequestWithoutHeldEpochOrWithANegativeOneIsRefused() {
        ObjectNode missing = json(SampleEvents.nodeLeaseRequested());
        missing.remove("heldEpoch");
        bothRefuse(EventType.NODE_LEASE_REQUESTED, missing, "a request without heldEpoch");
        ObjectNode negative = json(SampleEvents.nodeLeaseRequested());
        negative.put("heldEpoch", -1);
        bothRefuse(EventType.NODE_LEASE_REQUESTED, negative, "heldEpoch -1");
        ObjectNode none = json(SampleEvents.nodeLeaseRequested());
        none.put("heldEpoch", 0);
        assertEquals(0L, EventCodec.decode(NodeLeaseRequested.class, none.toString()).heldEpoch(), "0 = holds none");
    }

    /** Records of senders that predate leases still decode, with every fencing field absent. */
    @Test
    void eventsWithoutFencingFieldsStillDecodeWithTheFieldsNull() {
        ObjectNode command = json(SampleEvents.nodeCommand());
        command.remove("leaseEpoch");
        command.remove("claimGeneration");
        command.remove("fenceOnLapse");
        NodeCommand old = EventCodec.decode(NodeCommand.class, command.toString());
        assertNull(old.leaseEpoch());
        assertNull(old.claimGeneration());
        assertFalse(old.fencesOnLapse());
        assertTrue(schema(EventType.NODE_COMMAND).validate(command).isEmpty());

        for (EventType type : new EventType[] {EventType.MOUNT_DONE, EventType.NODE_EVENT, EventType.PLUGIN_HEALTH,
                EventType.NODE_STATE}) {
            ObjectNode json = json(SampleEvents.all().get(type));
            assertEquals(3, json.get("leaseEpoch").asLong(), type + " sample carries its epoch");
            json.remove("leaseEpoch");
            assertTrue(schema(type).validate(json).isEmpty(), type.toString());
            assertEquals(json.toString(), EventCodec.mapper().valueToTree(EventCodec.decode(type,
                    json.toString().getBytes())).toString(), type + " gained a field on decode");
        }
    }

    @Test
    void aLeaseEpochBelowOneIsRefusedOnEveryEventThatCarriesIt() {
        for (EventType type : new EventType[] {EventType.NODE_COMMAND, EventType.MOUNT_DONE, EventType.NODE_EVENT,
                EventType.PLUGIN_HEALTH, EventType.NODE_STATE}) {
            ObjectNode json = json(SampleEvents.all().get(type));
            json.put("leaseEpoch", 0);
            bothRefuse(type, json, type + " with leaseEpoch 0");
        }
    }

    @Test
    void theDeregisteredReportKeepsItsLeaseEpoch() {
        assertEquals(3L, SampleEvents.pluginHealth().asDeregistered().leaseEpoch());
    }
}
