package io.csiorchestrator.deploycheck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

/** Reads the deployment files of the repository and walks the parsed YAML. */
final class Manifests {

    private Manifests() {
    }

    /** The repository root: the surefire property, else the parent of the working directory. */
    static Path root() {
        String configured = System.getProperty("deploy.check.root");
        Path root = configured != null ? Path.of(configured) : Path.of("").toAbsolutePath().getParent();
        root = root.toAbsolutePath().normalize();
        assertTrue(Files.isRegularFile(root.resolve("docker-compose.yml")), "no docker-compose.yml under " + root);
        return root;
    }

    static Path kubernetesDir() {
        return root().resolve("deploy/kubernetes");
    }

    /** Every regular file under {@code dir}, sorted. */
    static List<Path> filesUnder(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Path> yamlFilesUnder(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile)
                    .filter(p -> p.toString().endsWith(".yaml") || p.toString().endsWith(".yml"))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every non-empty document of a (multi-document) YAML file, each a mapping; fails on a parse error. */
    static List<Map<String, Object>> documents(Path file) {
        LoaderOptions options = new LoaderOptions();
        options.setAllowDuplicateKeys(false);
        Yaml yaml = new Yaml(options);
        List<Map<String, Object>> documents = new ArrayList<>();
        try {
            for (Object document : yaml.loadAll(read(file))) {
                if (document == null) {
                    continue; // a comment-only preamble before the first ---
                }
                documents.add(asMap(document, file + ": a document"));
            }
        } catch (RuntimeException e) {
            fail(file + " is not valid YAML: " + e.getMessage(), e);
        }
        assertTrue(!documents.isEmpty(), file + " has no document");
        return documents;
    }

    /** Every Kubernetes object under deploy/kubernetes, kustomization.yaml included. */
    static List<Map<String, Object>> kubernetesObjects() {
        List<Map<String, Object>> all = new ArrayList<>();
        for (Path file : yamlFilesUnder(kubernetesDir())) {
            all.addAll(documents(file));
        }
        return all;
    }

    static List<Map<String, Object>> ofKind(List<Map<String, Object>> objects, String kind) {
        return objects.stream().filter(o -> kind.equals(o.get("kind"))).toList();
    }

    static Map<String, Object> named(List<Map<String, Object>> objects, String kind, String name) {
        List<Map<String, Object>> found = ofKind(objects, kind).stream()
                .filter(o -> name.equals(string(o, "metadata", "name")))
                .toList();
        assertEquals(1, found.size(), "exactly one " + kind + " named " + name);
        return found.get(0);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> asMap(Object value, String what) {
        assertInstanceOf(Map.class, value, what + " must be a mapping, is " + value);
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    static List<Object> asList(Object value, String what) {
        assertInstanceOf(List.class, value, what + " must be a list, is " + value);
        return (List<Object>) value;
    }

    /** The value at a path of keys, or empty when a key on the way is missing. */
    static Optional<Object> at(Map<String, Object> node, String... path) {
        Object current = node;
        for (String key : path) {
            if (!(current instanceof Map<?, ?> map) || !map.containsKey(key)) {
                return Optional.empty();
            }
            current = map.get(key);
        }
        return Optional.ofNullable(current);
    }

    static Object get(Map<String, Object> node, String... path) {
        return at(node, path).orElseThrow(() -> new AssertionError("missing " + String.join(".", path) + " in " + node));
    }

    static Map<String, Object> map(Map<String, Object> node, String... path) {
        return asMap(get(node, path), String.join(".", path));
    }

    static List<Map<String, Object>> maps(Map<String, Object> node, String... path) {
        return asList(get(node, path), String.join(".", path)).stream()
                .map(o -> asMap(o, String.join(".", path) + "[]"))
                .toList();
    }

    static String string(Map<String, Object> node, String... path) {
        return at(node, path).map(Object::toString).orElse(null);
    }

    /** The entry of a list of mappings whose {@code name} is the given one. */
    static Map<String, Object> byName(List<Map<String, Object>> list, String name, String what) {
        return list.stream()
                .filter(m -> name.equals(m.get("name")))
                .findFirst()
                .orElseThrow(() -> new AssertionError(what + " has no entry named " + name + ": " + list));
    }

    /** A container's env entry by name. */
    static Map<String, Object> env(Map<String, Object> container, String name) {
        Map<String, Object> entry = byName(maps(container, "env"), name, "env of container " + container.get("name"));
        assertNotNull(entry);
        return entry;
    }

    static boolean isTrue(Object value) {
        return Objects.equals(value, Boolean.TRUE) || "true".equals(value);
    }
}
