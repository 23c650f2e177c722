package io.csiorchestrator.worker.mount;

/**
 * A plugin call that failed, as the worker reports it: the gRPC code name (or a worker code such
 * as PLUGIN_NOT_FOUND) and the operator message (from the CSI client's error mapping). Never holds
 * secrets.
 */
public final class PluginCallFailure extends RuntimeException {

    private final String code;
    private final boolean uncertain;

    public PluginCallFailure(String code, String operatorMessage, boolean uncertain) {
        super(operatorMessage, null, false, false);
        this.code = code;
        this.uncertain = uncertain;
    }

    public String code() {
        return code;
    }

    /** The call may still take effect (plugin down or slow): the state stays "in progress". */
    public boolean uncertain() {
        return uncertain;
    }
}
