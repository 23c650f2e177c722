package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.io.IOException;
import java.io.InputStream;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The JSON Schemas shipped for consumers in other languages agree with the Java contract. */
class JsonSchemaTest {

    private static final JsonSchemaFactory FACTORY = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);
    private static final SchemaValidatorsConfig CONFIG = SchemaValidatorsConfig.builder().formatAssertionsEnabled(true).build();

    private static JsonSchema schema(EventType type) {
        try (InputStream in = EventType.class.getResourceAsStream(type.schemaResource())) {
            assertNotNull(in, "missing schema " + type.schemaResource());
            return FACTORY.getSchema(in, CONFIG);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ObjectNode sampleJson(EventType type) {
        return (ObjectNode) EventCodec.mapper().valueToTree(SampleEvents.all().get(type));
    }

    @Test
    void thereIsOneSchemaForEachOfTheTenTopics() {
        assertEquals(10, Topic.values().length);
        for (Topic topic : Topic.values()) {
            assertNotNull(EventType.class.getResource("/schemas/" + topic.baseName() + ".schema.json"), topic.baseName());
        }
    }

    @Test
    void everySchemaAcceptsTheEncodedSampleOfItsEvent() throws IOException {
        for (EventType type : EventType.values()) {
            JsonNode json = EventCodec.mapper().readTree(EventCodec.encode(SampleEvents.all().get(type)));
            Set<ValidationMessage> errors = schema(type).validate(json);
            assertTrue(errors.isEmpty(), type + ": " + errors);
        }
        JsonNode failed = EventCodec.mapper().valueToTree(SampleEvents.mountFailed());
        assertTrue(schema(EventType.MOUNT_DONE).validate(failed).isEmpty());
    }

    @Test
    void everySchemaRejectsAnEventWithoutItsFirstRequiredField() {
        for (EventType type : EventType.values()) {
            JsonSchema schema = schema(type);
            ObjectNode json = sampleJson(type);
            String firstRequired = schema.getSchemaNode().get("required").get(0).asText();
            json.remove(firstRequired);
            assertFalse(schema.validate(json).isEmpty(), type + " accepted a record without " + firstRequired);
        }
    }

    @Test
    void everySchemaRejectsAHostileIdAndAWrongType() {
        for (EventType type : EventType.values()) {
            JsonSchema schema = schema(type);
            ObjectNode hostile = sampleJson(type);
            String idField = hostile.has("volumeId") ? "volumeId" : hostile.has("pluginId") ? "pluginId" : "nodeId";
            hostile.put(idField, "../etc");
            assertFalse(schema.validate(hostile).isEmpty(), type + " accepted " + idField + "='../etc'");

            ObjectNode wrongType = sampleJson(type);
            String timestamp = wrongType.has("occurredAt") ? "occurredAt" : wrongType.has("issuedAt") ? "issuedAt"
                    : wrongType.has("completedAt") ? "completedAt" : wrongType.has("observedAt") ? "observedAt"
                    : wrongType.has("updatedAt") ? "updatedAt" : wrongType.has("takenAt") ? "takenAt"
                    : wrongType.has("sentAt") ? "sentAt" : wrongType.has("at") ? "at" : "requestedAt";
            wrongType.put(timestamp, 42);
            assertFalse(schema.validate(wrongType).isEmpty(), type + " accepted a number as " + timestamp);
        }
    }

    @Test
    void conditionalRulesMatchTheJavaChecks() {
        ObjectNode failure = (ObjectNode) EventCodec.mapper().valueToTree(SampleEvents.mountFailed());
        failure.remove("errorMessage");
        assertFalse(schema(EventType.MOUNT_DONE).validate(failure).isEmpty(), "a failure needs its message");

        ObjectNode write = sampleJson(EventType.CLAIM_REQUESTED);
        write.remove("accessMode");
        assertFalse(schema(EventType.CLAIM_REQUESTED).validate(write).isEmpty(), "a write claim needs its access mode");
        write.put("mode", "release");
        assertTrue(schema(EventType.CLAIM_REQUESTED).validate(write).isEmpty(), "a release needs no access mode");

        ObjectNode plainFlags = sampleJson(EventType.CLAIM_REQUESTED);
        plainFlags.putObject("mountOptions").put("fsType", "ext4").putArray("mountFlags").add("noatime");
        assertFalse(schema(EventType.CLAIM_REQUESTED).validate(plainFlags).isEmpty(), "mount flags never travel in plain text");
        ObjectNode badSeal = sampleJson(EventType.CLAIM_REQUESTED);
        ((ObjectNode) badSeal.get("sealedMountFlags")).put("algorithm", "ROT13");
        assertFalse(schema(EventType.CLAIM_REQUESTED).validate(badSeal).isEmpty(), "sealed flags are AES-256-GCM");
        ObjectNode fsOnly = sampleJson(EventType.CLAIM_REQUESTED);
        fsOnly.remove("sealedMountFlags");
        assertTrue(schema(EventType.CLAIM_REQUESTED).validate(fsOnly).isEmpty(), "a plain fs type without flags is fine");

        ObjectNode deregistered = sampleJson(EventType.PLUGIN_HEALTH);
        deregistered.put("healthy", false).put("deregistered", true);
        assertTrue(schema(EventType.PLUGIN_HEALTH).validate(deregistered).isEmpty(), "the last report of a removed instance");
        deregistered.put("healthy", true);
        assertFalse(schema(EventType.PLUGIN_HEALTH).validate(deregistered).isEmpty(), "a removed instance is never healthy");
        Violations java = new Violations();
        EventCodec.mapper().convertValue(deregistered, PluginHealth.class).checkFields(java);
        assertFalse(java.isEmpty(), "the Java check refuses it too");

        ObjectNode unknown = sampleJson(EventType.NODE_EVENT);
        unknown.put("fieldFromTheFuture", true);
        assertTrue(schema(EventType.NODE_EVENT).validate(unknown).isEmpty(), "unknown fields are allowed");
    }

    @Test
    void nodeStateRejectsAHostileNestedIdAndAnUnknownMountStateLikeTheCodec() {
        ObjectNode hostile = sampleJson(EventType.NODE_STATE);
        ((ObjectNode) hostile.get("volumes").get(0)).put("volumeId", "../etc");
        assertFalse(schema(EventType.NODE_STATE).validate(hostile).isEmpty(), "a nested volumeId '../etc' was accepted");
        assertThrows(MalformedEventException.class, () -> EventCodec.decode(NodeStateReported.class, hostile.toString()));

        ObjectNode unknownState = sampleJson(EventType.NODE_STATE);
        ((ObjectNode) unknownState.get("volumes").get(0).get("publications").get(0)).put("state", "half-mounted");
        assertFalse(schema(EventType.NODE_STATE).validate(unknownState).isEmpty(), "an unknown mount state was accepted");
        assertThrows(MalformedEventException.class, () -> EventCodec.decode(NodeStateReported.class, unknownState.toString()));

        ObjectNode noSequence = sampleJson(EventType.NODE_STATE);
        noSequence.put("sequence", 0);
        assertFalse(schema(EventType.NODE_STATE).validate(noSequence).isEmpty(), "sequence 0 was accepted");
        assertThrows(MalformedEventException.class, () -> EventCodec.decode(NodeStateReported.class, noSequence.toString()));
    }

    /** The schema's kind enum and NodeEventKind agree, volume-condition included: each kind validates, a made-up one does not. */
    @Test
    void theNodeEventsSchemaAcceptsEveryNodeEventKindAndNoOther() {
        for (NodeEventKind kind : NodeEventKind.values()) {
            ObjectNode json = sampleJson(EventType.NODE_EVENT);
            json.put("kind", kind.wire());
            assertTrue(schema(EventType.NODE_EVENT).validate(json).isEmpty(), kind.wire());
        }
        ObjectNode condition = (ObjectNode) EventCodec.mapper().valueToTree(new NodeEvent("node-1", null,
                NodeEventKind.VOLUME_CONDITION, "Volume condition abnormal", "hostpath", "default", "vol-1", null, null,
                null, java.util.Map.of("condition", "abnormal", "message", "disk failing"), java.time.Instant.now()));
        assertTrue(schema(EventType.NODE_EVENT).validate(condition).isEmpty());
        ObjectNode unknown = sampleJson(EventType.NODE_EVENT);
        unknown.put("kind", "volume-mood");
        assertFalse(schema(EventType.NODE_EVENT).validate(unknown).isEmpty());
    }
}
