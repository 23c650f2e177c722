package io.csiorchestrator.worker.state;

/**
 * The volume's staging on this node. STAGING and UNSTAGING are recorded before the plugin call,
 * so after a crash they mean "uncertain": the call may or may not have taken effect.
 */
public enum StageState {
    UNSTAGED, STAGING, STAGED, UNSTAGING
}
