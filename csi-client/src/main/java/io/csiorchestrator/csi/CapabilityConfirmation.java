package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesRequest;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesResponse;
import io.csiorchestrator.csi.v1.VolumeCapability;

import java.util.HashSet;
import java.util.List;
import java.util.Map;

/**
 * What a plugin's answer to ValidateVolumeCapabilities says about the request. The spec's
 * {@code confirmed} field is optional in practice: some plugins (Azure's, Linode's) leave it out
 * even for volumes they serve, so its absence is accepted as "not confirmed, not refused". When it
 * is present it must confirm every requested capability and echo any context and parameters it
 * names unchanged.
 *
 * @param outcome the verdict
 * @param message why, in operator words, including the plugin's message when it gave one
 */
public record CapabilityConfirmation(Outcome outcome, String message) {

    public enum Outcome {
        /** The plugin confirmed exactly what was asked. */
        CONFIRMED,
        /** The plugin left {@code confirmed} out; accepted. */
        NOT_CONFIRMED,
        /** The plugin's confirmation does not cover what was asked; refused. */
        MISMATCH
    }

    /** Whether the orchestrator may go on with the volume. */
    public boolean accepted() {
        return outcome != Outcome.MISMATCH;
    }

    public static CapabilityConfirmation check(ValidateVolumeCapabilitiesRequest request,
                                               ValidateVolumeCapabilitiesResponse response) {
        String pluginSays = response.getMessage().isBlank() ? "" : " (plugin says: "
                + CsiRedactor.scrub(response.getMessage(), request) + ")";
        String volume = CallSubject.of(request).volumeLabel();
        if (!response.hasConfirmed()) {
            return new CapabilityConfirmation(Outcome.NOT_CONFIRMED,
                    "the CSI plugin did not confirm the capabilities of " + volume + pluginSays);
        }
        ValidateVolumeCapabilitiesResponse.Confirmed confirmed = response.getConfirmed();
        List<VolumeCapability> asked = request.getVolumeCapabilitiesList();
        for (int i = 0; i < asked.size(); i++) {
            VolumeCapability capability = asked.get(i);
            boolean covered = confirmed.getVolumeCapabilitiesList().stream()
                    .anyMatch(candidate -> sameCapability(capability, candidate));
            if (!covered) {
                return new CapabilityConfirmation(Outcome.MISMATCH, "the CSI plugin's confirmation for "
                        + volume + " does not include requested capability #" + (i + 1) + " ("
                        + describe(capability) + ")" + pluginSays);
            }
        }
        String contextProblem = differingEcho("volume context", request.getVolumeContextMap(),
                confirmed.getVolumeContextMap());
        String parametersProblem = differingEcho("parameters", request.getParametersMap(),
                confirmed.getParametersMap());
        String problem = contextProblem != null ? contextProblem : parametersProblem;
        if (problem != null) {
            return new CapabilityConfirmation(Outcome.MISMATCH, "the CSI plugin confirmed " + volume
                    + " with other " + problem + " than requested" + pluginSays);
        }
        return new CapabilityConfirmation(Outcome.CONFIRMED, "the CSI plugin confirmed the capabilities of "
                + volume + pluginSays);
    }

    /** Same access mode, same access type, same fs type, same mount flags in any order. */
    static boolean sameCapability(VolumeCapability a, VolumeCapability b) {
        if (a.getAccessMode().getMode() != b.getAccessMode().getMode()
                || a.getAccessTypeCase() != b.getAccessTypeCase()) {
            return false;
        }
        if (a.hasMount()) {
            return a.getMount().getFsType().equals(b.getMount().getFsType())
                    && a.getMount().getVolumeMountGroup().equals(b.getMount().getVolumeMountGroup())
                    && new HashSet<>(a.getMount().getMountFlagsList())
                    .equals(new HashSet<>(b.getMount().getMountFlagsList()));
        }
        return true;
    }

    private static String describe(VolumeCapability capability) {
        String type = capability.hasBlock() ? "block-device"
                : capability.hasMount() ? "file-system"
                : "no access type";
        String fs = capability.hasMount() && !capability.getMount().getFsType().isEmpty()
                ? " " + capability.getMount().getFsType() : "";
        return capability.getAccessMode().getMode() + ", " + type + fs;
    }

    /** An echoed map may be empty (not echoed); when the plugin echoes it, it must be the same. */
    private static String differingEcho(String what, Map<String, String> asked, Map<String, String> echoed) {
        if (echoed.isEmpty() || echoed.equals(asked)) {
            return null;
        }
        return what;
    }
}
