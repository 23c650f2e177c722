package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * Where the services are: flag, else environment variable, else the endpoints file that
 * {@code csi up} writes ({@code .csi/up/endpoints.properties}, or {@code <work-dir>/endpoints.properties}
 * with {@code --work-dir}), else the services' default ports.
 */
public record Endpoints(String claimsUrl, String registryUrl, String kafkaBootstrap, String topicPrefix) {

    static final Set<String> OPTIONS = Set.of("claims-url", "registry-url", "kafka", "topic-prefix", "namespace",
            "home");

    public static final String FILE = "endpoints.properties";

    public static Endpoints resolve(Args args, Map<String, String> env, Path home) {
        Properties up = new Properties();
        // --work-dir: the endpoints file of a system `up --work-dir D` started (else .csi/up).
        Path file = Up.workDir(args, home).resolve(FILE);
        if (Files.isRegularFile(file)) {
            try (Reader reader = Files.newBufferedReader(file)) {
                up.load(reader);
            } catch (IOException e) {
                // unreadable: fall back to the defaults
            }
        }
        return new Endpoints(
                pick(args, "claims-url", env, "CSI_CLAIMS_URL", up, "claims.url", "http://localhost:8081"),
                pick(args, "registry-url", env, "CSI_REGISTRY_URL", up, "registry.url", "http://localhost:8082"),
                pick(args, "kafka", env, "CSI_KAFKA_BOOTSTRAP", up, "kafka.bootstrap.servers", "localhost:9092"),
                pick(args, "topic-prefix", env, "CSI_TOPICS_PREFIX", up, "csi.topics.prefix", ""));
    }

    private static String pick(Args args, String option, Map<String, String> env, String envName, Properties up,
                               String key, String fallback) {
        String value = args.option(option).orElse(env.get(envName));
        if (value == null || value.isBlank()) {
            value = up.getProperty(key, fallback);
        }
        return stripSlash(value);
    }

    private static String stripSlash(String url) {
        return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    }
}
