package io.csiorchestrator.csi;

import io.grpc.Status;

/**
 * A CSI call that failed for good: after the retry policy gave up, or at once for codes it does
 * not retry. The message is safe to log and to show: it holds the operator message and the
 * plugin's own status message with every secret and mount flag of the request scrubbed out.
 */
public final class CsiCallException extends RuntimeException {

    private final CsiRpc rpc;
    private final Status.Code code;
    private final String operatorMessage;
    private final String pluginMessage;
    private final int attempts;
    private final String redactedRequest;

    public CsiCallException(CsiRpc rpc, Status.Code code, String operatorMessage, String pluginMessage,
                            int attempts, String redactedRequest, Throwable cause) {
        super(format(rpc, code, operatorMessage, pluginMessage, attempts), cause, true, false);
        this.rpc = rpc;
        this.code = code;
        this.operatorMessage = operatorMessage;
        this.pluginMessage = pluginMessage == null ? "" : pluginMessage;
        this.attempts = attempts;
        this.redactedRequest = redactedRequest == null ? "" : redactedRequest;
    }

    public CsiRpc rpc() {
        return rpc;
    }

    public Status.Code code() {
        return code;
    }

    /** What happened, in the orchestrator's words. */
    public String operatorMessage() {
        return operatorMessage;
    }

    /** The plugin's status message (human readable per the spec), secrets scrubbed; may be empty. */
    public String pluginMessage() {
        return pluginMessage;
    }

    /** How many attempts were made, at least 1. */
    public int attempts() {
        return attempts;
    }

    /** The request as text with secrets and mount flags blanked. */
    public String redactedRequest() {
        return redactedRequest;
    }

    public CsiFailureKind kind() {
        return CsiFailureKind.of(code);
    }

    /** The operation may still be going on at the plugin (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED). */
    public boolean isUncertain() {
        return kind() == CsiFailureKind.UNCERTAIN;
    }

    /** Worth retrying later with backoff (uncertain or transient failures). */
    public boolean isRetryable() {
        return kind() == CsiFailureKind.UNCERTAIN || kind() == CsiFailureKind.TRANSIENT;
    }

    /** Will fail the same way until something changes; never retry blindly. */
    public boolean isFatal() {
        return kind() == CsiFailureKind.FATAL;
    }

    private static String format(CsiRpc rpc, Status.Code code, String operatorMessage, String pluginMessage,
                                 int attempts) {
        StringBuilder text = new StringBuilder(operatorMessage)
                .append(" [").append(rpc).append(' ').append(code)
                .append(attempts == 1 ? ", 1 attempt" : ", " + attempts + " attempts").append(']');
        if (pluginMessage != null && !pluginMessage.isBlank()) {
            text.append(": plugin says: ").append(pluginMessage);
        }
        return text.toString();
    }
}
