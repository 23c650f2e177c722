package io.csiorchestrator.csi;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of a {@link CsiPluginClient}.
 *
 * @param connectTimeout  how long opening the socket may take
 * @param retryPolicy     retries, backoff and per-attempt deadline of every call
 * @param attemptListener told about every attempt of every call
 */
public record CsiClientOptions(Duration connectTimeout, CsiRetryPolicy retryPolicy, CsiAttemptListener attemptListener) {

    public CsiClientOptions {
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        Objects.requireNonNull(retryPolicy, "retryPolicy");
        Objects.requireNonNull(attemptListener, "attemptListener");
        if (connectTimeout.isNegative() || connectTimeout.isZero()) {
            throw new IllegalArgumentException("connectTimeout must be positive, got " + connectTimeout);
        }
    }

    /** 10 s to connect, {@link CsiRetryPolicy#defaults()}, no listener. */
    public static CsiClientOptions defaults() {
        return new CsiClientOptions(Duration.ofSeconds(10), CsiRetryPolicy.defaults(), CsiAttemptListener.NONE);
    }

    public CsiClientOptions withConnectTimeout(Duration timeout) {
        return new CsiClientOptions(timeout, retryPolicy, attemptListener);
    }

    public CsiClientOptions withRetryPolicy(CsiRetryPolicy policy) {
        return new CsiClientOptions(connectTimeout, policy, attemptListener);
    }

    public CsiClientOptions withAttemptListener(CsiAttemptListener listener) {
        return new CsiClientOptions(connectTimeout, retryPolicy, listener);
    }
}
