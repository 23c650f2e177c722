package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.EventCodec;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;

/** A small JSON-over-HTTP client whose failures read well ("claim-service unreachable at ..."). */
public final class Http {

    public record Response(int status, JsonNode body, String raw) {
        public boolean ok() {
            return status / 100 == 2;
        }

        /** The service's {@code error} field, or the raw body. */
        public String error() {
            if (body != null && body.hasNonNull("error")) {
                return body.get("error").asText();
            }
            return raw == null || raw.isBlank() ? "HTTP " + status : raw.strip();
        }
    }

    /** The service could not be reached at all. */
    public static final class UnreachableException extends RuntimeException {
        public UnreachableException(String message) {
            super(message);
        }
    }

    static final ObjectMapper MAPPER = EventCodec.mapper();

    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
    private final String service;
    private final String base;
    private final String token;

    /** Without credentials: for the open endpoints (health). */
    public Http(String service, String base) {
        this(service, base, null);
    }

    /** Every request carries {@code token} as {@code Authorization: Bearer} (never logged or printed). */
    public Http(String service, String base, String token) {
        this.service = service;
        this.base = base;
        this.token = token;
    }

    public String base() {
        return base;
    }

    public Response get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET());
    }

    public Response post(String path, String json) {
        return send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json == null ? "" : json)));
    }

    public Response delete(String path) {
        return send(HttpRequest.newBuilder(uri(path)).DELETE());
    }

    private URI uri(String path) {
        return URI.create(base + path);
    }

    private Response send(HttpRequest.Builder request) {
        request.timeout(Duration.ofSeconds(30)).header("Accept", "application/json");
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        HttpRequest built = request.build();
        try {
            HttpResponse<String> response = client.send(built, HttpResponse.BodyHandlers.ofString());
            JsonNode body = null;
            String raw = response.body();
            if (raw != null && !raw.isBlank()) {
                try {
                    body = MAPPER.readTree(raw);
                } catch (IOException notJson) {
                    body = null;
                }
            }
            return new Response(response.statusCode(), body, raw);
        } catch (ConnectException | HttpConnectTimeoutException e) {
            throw new UnreachableException(service + " unreachable at " + base
                    + " (is it running? start the system with ./csi up, or point --" + flag() + " at it)");
        } catch (HttpTimeoutException e) {
            throw new UnreachableException(service + " at " + base + " did not answer within 30 s");
        } catch (IOException e) {
            throw new UnreachableException(service + " unreachable at " + base + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UnreachableException("interrupted while calling " + service);
        }
    }

    private String flag() {
        return service.startsWith("claim") ? "claims-url" : "registry-url";
    }
}
