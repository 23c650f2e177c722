package io.csiorchestrator.hostpath.state;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Everything the plugin remembers, as one immutable value: each change makes a new state, which
 * is persisted before it is used.
 *
 * @param volumes                volumes by id
 * @param controllerPublications ControllerPublishVolume results
 * @param stagings               stagings by volume id (one staging path per volume)
 * @param nodePublications       NodePublishVolume results by target path
 */
public record PluginState(
        SortedMap<String, VolumeRecord> volumes,
        List<ControllerPublication> controllerPublications,
        SortedMap<String, Staging> stagings,
        SortedMap<String, NodePublication> nodePublications) {

    public PluginState {
        volumes = Collections.unmodifiableSortedMap(new TreeMap<>(volumes == null ? Map.of() : volumes));
        controllerPublications = List.copyOf(controllerPublications == null ? List.of() : controllerPublications);
        stagings = Collections.unmodifiableSortedMap(new TreeMap<>(stagings == null ? Map.of() : stagings));
        nodePublications = Collections.unmodifiableSortedMap(
                new TreeMap<>(nodePublications == null ? Map.of() : nodePublications));
    }

    public static PluginState empty() {
        return new PluginState(null, null, null, null);
    }

    public Optional<VolumeRecord> volume(String id) {
        return Optional.ofNullable(volumes.get(id));
    }

    public Optional<VolumeRecord> volumeNamed(String name) {
        return volumes.values().stream().filter(volume -> volume.name().equals(name)).findFirst();
    }

    public List<ControllerPublication> publicationsOf(String volumeId) {
        return controllerPublications.stream().filter(p -> p.volumeId().equals(volumeId)).toList();
    }

    public Optional<ControllerPublication> publication(String volumeId, String nodeId) {
        return controllerPublications.stream()
                .filter(p -> p.volumeId().equals(volumeId) && p.nodeId().equals(nodeId))
                .findFirst();
    }

    public long volumesPublishedTo(String nodeId) {
        return controllerPublications.stream().filter(p -> p.nodeId().equals(nodeId))
                .map(ControllerPublication::volumeId).distinct().count();
    }

    public List<NodePublication> nodePublicationsOf(String volumeId) {
        return nodePublications.values().stream().filter(p -> p.volumeId().equals(volumeId)).toList();
    }

    /** Volumes staged or published on this node, each counted once. */
    public long volumesInUseOnNode() {
        return java.util.stream.Stream.concat(stagings.keySet().stream(),
                nodePublications.values().stream().map(NodePublication::volumeId)).distinct().count();
    }

    public PluginState withVolume(VolumeRecord volume) {
        TreeMap<String, VolumeRecord> next = new TreeMap<>(volumes);
        next.put(volume.id(), volume);
        return new PluginState(next, controllerPublications, stagings, nodePublications);
    }

    public PluginState withoutVolume(String id) {
        TreeMap<String, VolumeRecord> next = new TreeMap<>(volumes);
        next.remove(id);
        return new PluginState(next, controllerPublications, stagings, nodePublications);
    }

    public PluginState withPublication(ControllerPublication publication) {
        List<ControllerPublication> next = new ArrayList<>(controllerPublications);
        next.removeIf(p -> p.volumeId().equals(publication.volumeId()) && p.nodeId().equals(publication.nodeId()));
        next.add(publication);
        return new PluginState(volumes, next, stagings, nodePublications);
    }

    /** Removes the volume's publications to {@code nodeId}, or to every node when it is empty. */
    public PluginState withoutPublications(String volumeId, String nodeId) {
        List<ControllerPublication> next = new ArrayList<>(controllerPublications);
        next.removeIf(p -> p.volumeId().equals(volumeId) && (nodeId.isEmpty() || p.nodeId().equals(nodeId)));
        return new PluginState(volumes, next, stagings, nodePublications);
    }

    public PluginState withStaging(Staging staging) {
        TreeMap<String, Staging> next = new TreeMap<>(stagings);
        next.put(staging.volumeId(), staging);
        return new PluginState(volumes, controllerPublications, next, nodePublications);
    }

    public PluginState withoutStaging(String volumeId) {
        TreeMap<String, Staging> next = new TreeMap<>(stagings);
        next.remove(volumeId);
        return new PluginState(volumes, controllerPublications, next, nodePublications);
    }

    public PluginState withNodePublication(NodePublication publication) {
        TreeMap<String, NodePublication> next = new TreeMap<>(nodePublications);
        next.put(publication.targetPath(), publication);
        return new PluginState(volumes, controllerPublications, stagings, next);
    }

    public PluginState withoutNodePublication(String targetPath) {
        TreeMap<String, NodePublication> next = new TreeMap<>(nodePublications);
        next.remove(targetPath);
        return new PluginState(volumes, controllerPublications, stagings, next);
    }
}
