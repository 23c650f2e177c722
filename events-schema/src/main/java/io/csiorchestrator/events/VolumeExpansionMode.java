package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * When a plugin can expand a volume: CSI's {@code PluginCapability.VolumeExpansion.Type} (issue 14). {@link #ONLINE}:
 * also while it is published on a node (in use); {@link #OFFLINE}: only while it is published nowhere, so a volume
 * with claims must be released before it is expanded. On plugin-health it travels among the instance's
 * {@code pluginCapabilities} as {@link #capability()} ({@code VOLUME_EXPANSION_ONLINE} / {@code VOLUME_EXPANSION_OFFLINE}).
 */
public enum VolumeExpansionMode implements WireValue {
    ONLINE("online"),
    OFFLINE("offline");

    private final String wire;

    VolumeExpansionMode(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The name among plugin-health's {@code pluginCapabilities}: {@code VOLUME_EXPANSION_ONLINE} or {@code _OFFLINE}. */
    public String capability() {
        return "VOLUME_EXPANSION_" + name();
    }

    /**
     * The mode an instance's {@code pluginCapabilities} advertise: OFFLINE when it names OFFLINE (the stricter one,
     * should it name both), ONLINE when it names ONLINE, else null (no VolumeExpansion capability).
     */
    public static VolumeExpansionMode fromCapabilities(java.util.Collection<String> pluginCapabilities) {
        if (pluginCapabilities.contains(OFFLINE.capability())) {
            return OFFLINE;
        }
        return pluginCapabilities.contains(ONLINE.capability()) ? ONLINE : null;
    }

    @JsonCreator
    public static VolumeExpansionMode fromWire(String value) {
        return WireValue.parse(VolumeExpansionMode.class, value);
    }
}
