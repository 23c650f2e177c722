package io.csiorchestrator.worker.mount;

import io.csiorchestrator.worker.state.VolumeKey;
import java.util.List;

/** What restore or heal did for one volume. */
public record Convergence(VolumeKey key, int staged, int published, int released, List<String> errors,
                          List<Repair> repairs) {
    public Convergence {
        errors = List.copyOf(errors);
        repairs = List.copyOf(repairs);
    }

    public boolean nothingToDo() {
        return staged == 0 && published == 0 && released == 0 && errors.isEmpty() && repairs.isEmpty();
    }

    /**
     * One damaged path that a convergence found where the record says mounted, and unmounted
     * (when corrupted) and mounted again.
     *
     * @param path         {@code staging} or {@code target}
     * @param allocationId the target's allocation; null for the staging
     */
    public record Repair(String path, String allocationId, MountCheck.Result found) {
        public MountDamage damage() {
            return found.damage();
        }

        String detailKey() {
            return allocationId == null ? path : path + "/" + allocationId;
        }
    }
}
