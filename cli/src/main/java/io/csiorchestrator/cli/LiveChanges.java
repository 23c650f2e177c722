package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * What wakes {@code ./csi volume status -w}: claim-service's live event stream ({@code GET /v1/status/events},
 * server-sent events, the status page's feed) read on a daemon thread; each entry that {@code matters} signals a
 * change. While the stream is not open (a token without every namespace gets 403 there, or claim-service restarts)
 * {@link #live()} is false and the caller falls back to refreshing every interval; the thread opens the stream again
 * after each such interval. Nothing is polled while the stream is open.
 */
final class LiveChanges implements AutoCloseable {

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private boolean pending;
    private volatile boolean live;
    private volatile boolean closed;
    private volatile Stream<String> lines;
    private final Thread reader;

    private LiveChanges(Thread reader) {
        this.reader = reader;
    }

    /** A source that never signals (the caller refreshes every interval). */
    static LiveChanges none() {
        return new LiveChanges(null);
    }

    /**
     * Follows {@code base + /v1/status/events} with {@code token}; {@code matters} decides which feed entries (JSON)
     * signal a change; why the stream cannot be opened is told once on {@code err}.
     */
    static LiveChanges follow(String base, String token, Predicate<JsonNode> matters, Duration retry, PrintStream err) {
        LiveChanges[] self = new LiveChanges[1];
        Thread thread = new Thread(() -> self[0].read(base, token, matters, retry, err), "csi-cli-live-changes");
        thread.setDaemon(true);
        self[0] = new LiveChanges(thread);
        thread.start();
        return self[0];
    }

    /** Whether the live stream is open now. */
    boolean live() {
        return live;
    }

    /** Marks a change (and wakes a waiter). */
    void signal() {
        lock.lock();
        try {
            pending = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until a change is signalled or {@code timeoutNanos} passed; true if a change was pending (and consumes
     * it). Several changes while the caller was busy count as one.
     */
    boolean await(long timeoutNanos) throws InterruptedException {
        lock.lock();
        try {
            long left = timeoutNanos;
            while (!pending && left > 0) {
                left = changed.awaitNanos(left);
            }
            boolean was = pending;
            pending = false;
            return was;
        } finally {
            lock.unlock();
        }
    }

    private void read(String base, String token, Predicate<JsonNode> matters, Duration retry, PrintStream err) {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
        boolean told = false;
        while (!closed) {
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + "/v1/status/events"))
                    .header("Accept", "text/event-stream").GET();
            if (token != null) {
                request.header("Authorization", "Bearer " + token);
            }
            try {
                HttpResponse<Stream<String>> response = client.send(request.build(), HttpResponse.BodyHandlers.ofLines());
                if (response.statusCode() / 100 != 2) {
                    response.body().close();
                    if (!told) {
                        err.println("live events not available (HTTP " + response.statusCode() + " from "
                                + base + "/v1/status/events); refreshing every " + retry.toMillis() + " ms");
                        told = true;
                    }
                } else {
                    lines = response.body();
                    live = true;
                    told = false;
                    signal(); // what happened while the stream was closed
                    lines.forEach(line -> {
                        if (line.startsWith("data:")) {
                            try {
                                if (matters.test(Http.MAPPER.readTree(line.substring(5).strip()))) {
                                    signal();
                                }
                            } catch (IOException malformed) {
                                signal(); // cannot tell: look
                            }
                        }
                    });
                }
            } catch (IOException | RuntimeException e) {
                if (!told && !closed) {
                    err.println("live events not available (" + e.getClass().getSimpleName() + "); refreshing every "
                            + retry.toMillis() + " ms");
                    told = true;
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                live = false;
            }
            lock.lock();
            try {
                if (!closed) {
                    changed.await(retry.toNanos(), TimeUnit.NANOSECONDS); // before opening the stream again
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        Stream<String> open = lines;
        if (open != null) {
            open.close();
        }
        if (reader != null) {
            reader.interrupt();
        }
    }
}
