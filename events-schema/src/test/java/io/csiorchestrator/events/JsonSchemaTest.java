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
import java.util.List;
import java.util.Map;
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
    void thereIsOneSchemaForEachOfTheTwelveTopics() {
        assertEquals(12, Topic.values().length);
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
        assertFalse(schema(EventType.CLAIM_REQUESTED).validate(badSeal).isEmpty(), "sealed flags use the X25519-HKDF-SHA256-A256GCM scheme");
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

    /**
     * Issue 14's volume-status: a created volume and a failed snapshot (with its reason) pass the schema and the codec,
     * keyed by namespace/volume; a failure without its reason and a created result without the plugin's id fail both.
     */
    @Test
    void volumeStatusResultsFollowTheSameRulesInSchemaAndCodec() throws IOException {
        VolumeStatus failed = SampleEvents.snapshotFailed();
        ObjectNode failedJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(failed));
        assertTrue(schema(EventType.VOLUME_STATUS).validate(failedJson).isEmpty(), failedJson.toString());
        assertEquals(failed, EventCodec.decode(VolumeStatus.class, EventCodec.encode(failed)));
        assertEquals("default/vol-1", failed.recordKey());
        failedJson.remove("reason");
        assertFalse(schema(EventType.VOLUME_STATUS).validate(failedJson).isEmpty(), "a failure needs its reason");
        assertFalse(javaAccepts(failedJson, VolumeStatus.class), "the Java check refuses it too");

        ObjectNode created = sampleJson(EventType.VOLUME_STATUS);
        assertTrue(javaAccepts(created, VolumeStatus.class), created.toString());
        created.remove("externalId");
        assertFalse(schema(EventType.VOLUME_STATUS).validate(created).isEmpty(), "a created volume names the plugin's id");
        assertFalse(javaAccepts(created, VolumeStatus.class), "the Java check refuses it too");
        VolumeStatus expanded = new VolumeStatus("default", "vol-1", null, "hostpath", VolumeState.EXPANDED, "ext-vol-1",
                2L << 20, "expanded by the controller and on every node where it is published",
                java.time.Instant.parse("2026-01-31T12:00:00Z"));
        ObjectNode expandedJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(expanded));
        assertTrue(schema(EventType.VOLUME_STATUS).validate(expandedJson).isEmpty(), expandedJson.toString());
        assertEquals(expanded, EventCodec.decode(VolumeStatus.class, EventCodec.encode(expanded)));
        for (String field : List.of("capacityBytes", "externalId")) {
            ObjectNode without = expandedJson.deepCopy();
            without.remove(field);
            assertFalse(schema(EventType.VOLUME_STATUS).validate(without).isEmpty(), "expanded needs " + field);
            assertFalse(javaAccepts(without, VolumeStatus.class), "the Java check refuses it too: " + field);
        }
        ObjectNode ofSnapshot = expandedJson.deepCopy().put("snapshotId", "snap-1");
        assertFalse(schema(EventType.VOLUME_STATUS).validate(ofSnapshot).isEmpty(), "a snapshot is never expanded");
        assertFalse(javaAccepts(ofSnapshot, VolumeStatus.class), "the Java check refuses it too");
        ObjectNode expandFailed = expandedJson.deepCopy().put("state", "expand-failed");
        assertTrue(schema(EventType.VOLUME_STATUS).validate(expandFailed).isEmpty(), expandFailed.toString());
        expandFailed.remove("reason");
        assertFalse(schema(EventType.VOLUME_STATUS).validate(expandFailed).isEmpty(), "a failed expansion needs its reason");
        assertFalse(javaAccepts(expandFailed, VolumeStatus.class), "the Java check refuses it too");
    }

    /** plugin-status' volumeExpansion (issue 14) is online or offline in schema and codec, nothing else. */
    @Test
    void pluginStatusVolumeExpansionIsOnlineOrOffline() throws IOException {
        ObjectNode status = sampleJson(EventType.PLUGIN_STATUS);
        assertEquals("offline", status.get("volumeExpansion").asText());
        assertTrue(schema(EventType.PLUGIN_STATUS).validate(status).isEmpty(), status.toString());
        status.put("volumeExpansion", "sometimes");
        assertFalse(schema(EventType.PLUGIN_STATUS).validate(status).isEmpty());
        assertThrows(RuntimeException.class, () -> EventCodec.decode(PluginStatus.class,
                EventCodec.mapper().writeValueAsBytes(status)));
    }

    /**
     * Issue 36 item 1's one command per attach: a mount with {@code withController} and the claiming node's external
     * id passes the schema and the codec (and round-trips); without the external node id, or on a controller-publish,
     * both refuse it; without the flag the encoded mount carries no {@code withController} at all.
     */
    @Test
    void aMountWithItsControllerStepsFollowsTheSameRulesInSchemaAndCodec() throws IOException {
        NodeCommand mount = new NodeCommand("cmd-m", "node-1", NodeCommandKind.MOUNT, "default", "vol-1", "hostpath",
                "ext-vol-1", "alloc-1", AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, "ext4",
                "ext-node-1", Map.of(), Map.of(), null, java.time.Instant.parse("2026-01-31T12:00:00Z"));
        String plain = new String(EventCodec.encode(mount), java.nio.charset.StandardCharsets.UTF_8);
        assertFalse(plain.contains("withController"), plain);
        NodeCommand attach = mount.withControllerSteps();
        assertTrue(attach.controllerSteps());
        ObjectNode json = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(attach));
        assertTrue(json.get("withController").asBoolean(), json.toString());
        assertTrue(schema(EventType.NODE_COMMAND).validate(json).isEmpty(), json.toString());
        assertEquals(attach, EventCodec.decode(NodeCommand.class, EventCodec.encode(attach)));

        ObjectNode noNode = json.deepCopy();
        noNode.remove("externalNodeId");
        assertFalse(schema(EventType.NODE_COMMAND).validate(noNode).isEmpty(), "the controller steps need the node's external id");
        assertFalse(javaAccepts(noNode, NodeCommand.class), "the Java check refuses it too");

        ObjectNode controllerKind = json.deepCopy();
        controllerKind.put("kind", "controller-publish");
        assertFalse(schema(EventType.NODE_COMMAND).validate(controllerKind).isEmpty(), "only a mount or unmount combines");
        assertFalse(javaAccepts(controllerKind, NodeCommand.class), "the Java check refuses it too");

        ObjectNode detach = json.deepCopy();
        detach.put("kind", "unmount");
        assertTrue(schema(EventType.NODE_COMMAND).validate(detach).isEmpty(), detach.toString());
        assertTrue(javaAccepts(detach, NodeCommand.class));
    }

    /**
     * Issue 14's provisioning kinds: a create-volume command (no external id yet, a provision spec) and its
     * successful answer (the provisioned volume) pass the schema and the codec; a create-volume without its spec,
     * a delete-volume without the external id and a successful create-volume answer without the volume fail both.
     */
    @Test
    void createAndDeleteVolumeCommandsAndAnswersFollowTheSameRulesInSchemaAndCodec() throws IOException {
        NodeCommand create = new NodeCommand("cmd-c", "node-1", NodeCommandKind.CREATE_VOLUME, "default", "vol-1",
                "hostpath", null, null, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, "ext4", null,
                Map.of(), Map.of(), null, java.time.Instant.parse("2026-01-31T12:00:00Z"))
                .withProvision(new ProvisionSpec("default.vol-1", 1L << 30, null, Map.of("type", "fast"),
                        Map.of("zone", "a"), null, null));
        ObjectNode createJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(create));
        assertTrue(schema(EventType.NODE_COMMAND).validate(createJson).isEmpty(), createJson.toString());
        assertEquals(create, EventCodec.decode(NodeCommand.class, EventCodec.encode(create)));
        ObjectNode noSpec = createJson.deepCopy();
        noSpec.remove("provision");
        assertFalse(schema(EventType.NODE_COMMAND).validate(noSpec).isEmpty(), "a create-volume needs its spec");
        assertFalse(javaAccepts(noSpec, NodeCommand.class), "the Java check refuses it too");

        ObjectNode delete = createJson.deepCopy();
        delete.remove("provision");
        delete.put("kind", "delete-volume");
        assertFalse(schema(EventType.NODE_COMMAND).validate(delete).isEmpty(), "a delete-volume needs the external id");
        assertFalse(javaAccepts(delete, NodeCommand.class), "the Java check refuses it too");
        delete.put("externalVolumeId", "ext-vol-1");
        assertTrue(schema(EventType.NODE_COMMAND).validate(delete).isEmpty(), delete.toString());
        assertTrue(javaAccepts(delete, NodeCommand.class));

        MountDone created = new MountDone("cmd-c", "node-1", NodeCommandKind.CREATE_VOLUME, "default", "vol-1", null,
                true, null, null, Map.of(), null, null, java.time.Instant.parse("2026-01-31T12:00:01Z"), null, null,
                new ProvisionedVolume("ext-vol-1", 1L << 30, Map.of("ctx", "v"), List.of(Map.of("zone", "a"))));
        ObjectNode createdJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(created));
        assertTrue(schema(EventType.MOUNT_DONE).validate(createdJson).isEmpty(), createdJson.toString());
        assertEquals(created, EventCodec.decode(MountDone.class, EventCodec.encode(created)));
        ObjectNode noVolume = createdJson.deepCopy();
        noVolume.remove("provisioned");
        assertFalse(javaAccepts(noVolume, MountDone.class), "a created volume's answer names the volume");
        ((ObjectNode) createdJson.get("provisioned")).remove("externalVolumeId");
        assertFalse(schema(EventType.MOUNT_DONE).validate(createdJson).isEmpty(), "the provisioned volume has its id");
    }

    /**
     * Issue 14 item 2's snapshot kinds: a create-snapshot (source volume's external id, a spec with the snapshot's
     * CSI name) and its successful answer (the snapshot) pass the schema and the codec; a create-snapshot whose spec
     * carries a capacity, a delete-snapshot without the snapshot's id and a successful create-snapshot answer
     * without the snapshot fail both.
     */
    @Test
    void createAndDeleteSnapshotCommandsAndAnswersFollowTheSameRulesInSchemaAndCodec() throws IOException {
        NodeCommand create = new NodeCommand("cmd-s", "node-1", NodeCommandKind.CREATE_SNAPSHOT, "default", "vol-1",
                "hostpath", "ext-vol-1", null, null, null, false, null, null, Map.of(), Map.of(), null,
                java.time.Instant.parse("2026-01-31T12:00:00Z"))
                .withProvision(new ProvisionSpec("default.snap-1", null, null, Map.of("k", "v"), Map.of(), null, null));
        ObjectNode createJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(create));
        assertTrue(schema(EventType.NODE_COMMAND).validate(createJson).isEmpty(), createJson.toString());
        assertEquals(create, EventCodec.decode(NodeCommand.class, EventCodec.encode(create)));
        ObjectNode sized = createJson.deepCopy();
        ((ObjectNode) sized.get("provision")).put("capacityMinBytes", 5);
        assertFalse(schema(EventType.NODE_COMMAND).validate(sized).isEmpty(), "a snapshot has no capacity");
        assertFalse(javaAccepts(sized, NodeCommand.class), "the Java check refuses it too");

        ObjectNode delete = createJson.deepCopy();
        delete.put("kind", "delete-snapshot");
        assertFalse(schema(EventType.NODE_COMMAND).validate(delete).isEmpty(), "a delete-snapshot names the snapshot");
        assertFalse(javaAccepts(delete, NodeCommand.class), "the Java check refuses it too");
        ((ObjectNode) delete.get("provision")).put("sourceSnapshotId", "ext-snap-1");
        assertTrue(schema(EventType.NODE_COMMAND).validate(delete).isEmpty(), delete.toString());
        assertTrue(javaAccepts(delete, NodeCommand.class));

        MountDone created = new MountDone("cmd-s", "node-1", NodeCommandKind.CREATE_SNAPSHOT, "default", "vol-1", null,
                true, null, null, Map.of(), null, null, java.time.Instant.parse("2026-01-31T12:00:01Z"), null, null,
                null, new ProvisionedSnapshot("ext-snap-1", "ext-vol-1", 4096L, true));
        ObjectNode createdJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(created));
        assertTrue(schema(EventType.MOUNT_DONE).validate(createdJson).isEmpty(), createdJson.toString());
        assertEquals(created, EventCodec.decode(MountDone.class, EventCodec.encode(created)));
        ObjectNode noSnapshot = createdJson.deepCopy();
        noSnapshot.remove("snapshot");
        assertFalse(javaAccepts(noSnapshot, MountDone.class), "a created snapshot's answer names the snapshot");
        ((ObjectNode) createdJson.get("snapshot")).remove("externalSnapshotId");
        assertFalse(schema(EventType.MOUNT_DONE).validate(createdJson).isEmpty(), "the snapshot has its id");
    }

    /**
     * Issue 14 item 3's expansion kinds: a controller-expand-volume and a node-expand-volume (external id, a spec with
     * the volume's CSI name and the new capacity) and a successful controller-expand answer (capacity, node expansion
     * required) pass the schema and the codec; an expansion without a capacity, one with a content source, one without
     * the external id, and a successful controller-expand answer without the volume fail both.
     */
    @Test
    void expandCommandsAndAnswersFollowTheSameRulesInSchemaAndCodec() throws IOException {
        NodeCommand expand = new NodeCommand("cmd-e", "node-1", NodeCommandKind.CONTROLLER_EXPAND, "default", "vol-1",
                "hostpath", "ext-vol-1", null, null, null, false, null, null, Map.of(), Map.of(), null,
                java.time.Instant.parse("2026-01-31T12:00:00Z"))
                .withProvision(new ProvisionSpec("default.vol-1", 2L << 30, null, Map.of(), Map.of(), null, null));
        ObjectNode expandJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(expand));
        assertTrue(schema(EventType.NODE_COMMAND).validate(expandJson).isEmpty(), expandJson.toString());
        assertEquals(expand, EventCodec.decode(NodeCommand.class, EventCodec.encode(expand)));
        ObjectNode nodeExpand = expandJson.deepCopy();
        nodeExpand.put("kind", "node-expand-volume");
        assertTrue(schema(EventType.NODE_COMMAND).validate(nodeExpand).isEmpty(), nodeExpand.toString());
        assertTrue(javaAccepts(nodeExpand, NodeCommand.class));

        for (String kind : List.of("controller-expand-volume", "node-expand-volume")) {
            ObjectNode noCapacity = expandJson.deepCopy();
            noCapacity.put("kind", kind);
            ((ObjectNode) noCapacity.get("provision")).remove("capacityMinBytes");
            assertFalse(schema(EventType.NODE_COMMAND).validate(noCapacity).isEmpty(), kind + " needs the new capacity");
            assertFalse(javaAccepts(noCapacity, NodeCommand.class), "the Java check refuses it too");
            ObjectNode sourced = expandJson.deepCopy();
            sourced.put("kind", kind);
            ((ObjectNode) sourced.get("provision")).put("sourceSnapshotId", "ext-snap-1");
            assertFalse(schema(EventType.NODE_COMMAND).validate(sourced).isEmpty(), kind + " has no content source");
            assertFalse(javaAccepts(sourced, NodeCommand.class), "the Java check refuses it too");
            ObjectNode noVolume = expandJson.deepCopy();
            noVolume.put("kind", kind);
            noVolume.remove("externalVolumeId");
            assertFalse(schema(EventType.NODE_COMMAND).validate(noVolume).isEmpty(), kind + " names the volume");
            assertFalse(javaAccepts(noVolume, NodeCommand.class), "the Java check refuses it too");
        }

        MountDone expanded = new MountDone("cmd-e", "node-1", NodeCommandKind.CONTROLLER_EXPAND, "default", "vol-1",
                null, true, null, null, Map.of(), null, null, java.time.Instant.parse("2026-01-31T12:00:01Z"), null,
                null, ProvisionedVolume.expanded("ext-vol-1", 2L << 30, true));
        ObjectNode expandedJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(expanded));
        assertTrue(schema(EventType.MOUNT_DONE).validate(expandedJson).isEmpty(), expandedJson.toString());
        assertEquals(true, expandedJson.get("provisioned").get("nodeExpansionRequired").asBoolean());
        assertEquals(expanded, EventCodec.decode(MountDone.class, EventCodec.encode(expanded)));
        ObjectNode noAnswer = expandedJson.deepCopy();
        noAnswer.remove("provisioned");
        assertFalse(schema(EventType.MOUNT_DONE).validate(noAnswer).isEmpty(), "an expanded volume's answer names it");
        assertFalse(javaAccepts(noAnswer, MountDone.class), "the Java check refuses it too");
    }

    /**
     * Issue 14's list-volumes: a command (the listing namespace, the plugin as volume, a page) and its answer (the
     * page's ids and next token) pass the schema and the codec; a command without its page, with a volume's external
     * id or with a page size past 1000, another kind carrying a page, and a successful answer without the page fail
     * both.
     */
    @Test
    void listVolumesCommandsAndAnswersFollowTheSameRulesInSchemaAndCodec() throws IOException {
        NodeCommand list = NodeCommand.listVolumes("cmd-l", "node-1", "hostpath", new VolumeListing("tok", 500),
                java.time.Instant.parse("2026-01-31T12:00:00Z"));
        assertEquals("csi.list-volumes", list.namespace());
        assertEquals("hostpath", list.volumeId());
        ObjectNode json = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(list));
        assertTrue(schema(EventType.NODE_COMMAND).validate(json).isEmpty(), json.toString());
        assertEquals(list, EventCodec.decode(NodeCommand.class, EventCodec.encode(list)));
        ObjectNode noPage = json.deepCopy();
        noPage.remove("listing");
        ObjectNode ofVolume = json.deepCopy().put("externalVolumeId", "ext-vol-1");
        ObjectNode huge = json.deepCopy();
        ((ObjectNode) huge.get("listing")).put("maxEntries", 5000);
        ObjectNode mountWithPage = sampleJson(EventType.NODE_COMMAND);
        mountWithPage.set("listing", json.get("listing"));
        for (ObjectNode bad : List.of(noPage, ofVolume, huge, mountWithPage)) {
            assertFalse(schema(EventType.NODE_COMMAND).validate(bad).isEmpty(), bad.toString());
            assertFalse(javaAccepts(bad, NodeCommand.class), "the Java check refuses it too: " + bad);
        }

        MountDone page = MountDone.listed(list, "node-1", new ListedVolumes(List.of("ext-1", "ext-2"), "next"),
                java.time.Instant.parse("2026-01-31T12:00:01Z"));
        ObjectNode pageJson = (ObjectNode) EventCodec.mapper().readTree(EventCodec.encode(page));
        assertTrue(schema(EventType.MOUNT_DONE).validate(pageJson).isEmpty(), pageJson.toString());
        assertEquals(page, EventCodec.decode(MountDone.class, EventCodec.encode(page)));
        assertTrue(EventCodec.decode(MountDone.class, EventCodec.encode(MountDone.listed(list, "node-1",
                new ListedVolumes(List.of(), null), java.time.Instant.parse("2026-01-31T12:00:01Z")))).listed().last());
        ObjectNode noAnswer = pageJson.deepCopy();
        noAnswer.remove("listed");
        assertFalse(schema(EventType.MOUNT_DONE).validate(noAnswer).isEmpty(), "a listing's answer carries its page");
        assertFalse(javaAccepts(noAnswer, MountDone.class), "the Java check refuses it too");
    }

    private static boolean javaAccepts(ObjectNode json, Class<? extends ContractEvent> type) {
        try {
            EventCodec.decode(type, EventCodec.mapper().writeValueAsBytes(json));
            return true;
        } catch (MalformedEventException | IOException e) {
            return false;
        }
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
            if (kind == NodeEventKind.CAPACITY || kind == NodeEventKind.VOLUME_USAGE) {
                // these two carry their figures (theCapacityAndVolumeUsageKindsCarryTheirFiguresAsTheSchemaSays)
                json.put("pluginId", "hostpath").put("namespace", "default").put("volumeId", "vol-1");
                json.putObject("details").put(kind == NodeEventKind.CAPACITY ? "availableBytes" : "bytesUsed", "1");
            }
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

    /**
     * Issue 34's placement: a node entry and a capacity entry pass the schema and the codec; each kind needs its own
     * fields; a negative count is refused by both; the keys are per node and plugin, and per plugin and segment.
     */
    @Test
    void placementEntriesOfBothKinds() throws IOException {
        Placement node = Placement.node("hostpath", "node-1", Map.of("zone", "a"), 2, 1, true, SampleEvents.T);
        Placement capacity = Placement.capacity("hostpath", Map.of("zone", "a", "rack", "r1"), 1L << 30, null, 4096L,
                SampleEvents.T, SampleEvents.T);
        for (Placement p : List.of(node, capacity)) {
            JsonNode json = EventCodec.mapper().readTree(EventCodec.encode(p));
            assertTrue(schema(EventType.PLACEMENT).validate(json).isEmpty(), json.toString());
            assertEquals(p, EventCodec.decode(Placement.class, EventCodec.encode(p)));
        }
        assertEquals("node/hostpath/node-1", node.recordKey());
        assertEquals("capacity/hostpath/rack=r1,zone=a", capacity.recordKey());

        ObjectNode noHeld = (ObjectNode) EventCodec.mapper().valueToTree(node);
        noHeld.remove("volumesHeld");
        assertFalse(schema(EventType.PLACEMENT).validate(noHeld).isEmpty(), "a node entry needs volumesHeld");
        ObjectNode noSegment = (ObjectNode) EventCodec.mapper().valueToTree(capacity);
        noSegment.remove("segment");
        assertFalse(schema(EventType.PLACEMENT).validate(noSegment).isEmpty(), "a capacity entry needs its segment");
        ObjectNode negative = (ObjectNode) EventCodec.mapper().valueToTree(node);
        negative.put("maxVolumes", -1);
        assertFalse(schema(EventType.PLACEMENT).validate(negative).isEmpty(), "a negative limit");
        Violations v = new Violations();
        new Placement(PlacementKind.NODE, "hostpath", "node-1", Map.of(), -1L, 0L, true, null, null, null, null, null,
                SampleEvents.T).checkFields(v);
        assertFalse(v.isEmpty(), "the codec's check refuses a negative limit too");
    }

    /**
     * A capacity event (issue 34) as the worker writes it validates and reads back; one without availableBytes or with
     * a figure that is no number is refused by the schema and by {@link CapacityFigures#fromDetails}, naming the field.
     * The same for volume-usage with {@link VolumeUsageFigures}.
     */
    @Test
    void theCapacityAndVolumeUsageKindsCarryTheirFiguresAsTheSchemaSays() {
        CapacityFigures capacity = new CapacityFigures(java.util.Map.of("topology.example/zone", "a"), 5000L, 4000L, null);
        NodeEvent event = new NodeEvent("node-1", null, NodeEventKind.CAPACITY, "Capacity", "hostpath", null, null, null,
                null, null, capacity.toDetails(), java.time.Instant.now());
        ObjectNode json = (ObjectNode) EventCodec.mapper().valueToTree(event);
        assertTrue(schema(EventType.NODE_EVENT).validate(json).isEmpty());
        assertEquals(capacity, CapacityFigures.fromDetails(EventCodec.decode(NodeEvent.class, json.toString()).details()));

        ObjectNode noAvailable = json.deepCopy();
        ((ObjectNode) noAvailable.get("details")).remove("availableBytes");
        assertFalse(schema(EventType.NODE_EVENT).validate(noAvailable).isEmpty(), "a capacity without availableBytes");
        MalformedEventException missing = assertThrows(MalformedEventException.class, () -> CapacityFigures.fromDetails(
                java.util.Map.of("maximumVolumeBytes", "1")));
        assertEquals("details.availableBytes", missing.violations().get(0).field());
        ObjectNode words = json.deepCopy();
        ((ObjectNode) words.get("details")).put("availableBytes", "lots");
        assertFalse(schema(EventType.NODE_EVENT).validate(words).isEmpty(), "availableBytes 'lots'");
        MalformedEventException notANumber = assertThrows(MalformedEventException.class,
                () -> CapacityFigures.fromDetails(java.util.Map.of("availableBytes", "lots")));
        assertTrue(notANumber.getMessage().contains("availableBytes") && notANumber.getMessage().contains("lots"),
                notANumber.getMessage());

        VolumeUsageFigures usage = new VolumeUsageFigures(100L, 60L, 40L, 10L, 7L, 3L);
        ObjectNode usageJson = (ObjectNode) EventCodec.mapper().valueToTree(new NodeEvent("node-1", null,
                NodeEventKind.VOLUME_USAGE, "Volume usage", "hostpath", "default", "vol-1", null, null, null,
                usage.toDetails(), java.time.Instant.now()));
        assertTrue(schema(EventType.NODE_EVENT).validate(usageJson).isEmpty());
        assertEquals(usage, VolumeUsageFigures.fromDetails(
                EventCodec.decode(NodeEvent.class, usageJson.toString()).details()));
        ObjectNode noVolume = usageJson.deepCopy();
        noVolume.remove("volumeId");
        assertFalse(schema(EventType.NODE_EVENT).validate(noVolume).isEmpty(), "a volume-usage event without its volume");
        ObjectNode negative = usageJson.deepCopy();
        ((ObjectNode) negative.get("details")).put("inodesFree", "-1");
        assertFalse(schema(EventType.NODE_EVENT).validate(negative).isEmpty(), "inodesFree -1");
        assertThrows(MalformedEventException.class, () -> VolumeUsageFigures.fromDetails(java.util.Map.of()));
        assertThrows(MalformedEventException.class,
                () -> VolumeUsageFigures.fromDetails(java.util.Map.of("inodesFree", "-1")));
    }
}
