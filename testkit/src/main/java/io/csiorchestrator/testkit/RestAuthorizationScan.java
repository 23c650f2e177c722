package io.csiorchestrator.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Every JAX-RS operation of a service names who may call it (Nomad's semgrep rule
 * {@code rpc-potentially-unauthenticated}, as a test): a resource method ({@code @GET}, {@code @POST}, ...) under a
 * class with {@code @Path} must carry {@code @RolesAllowed}, {@code @PermitAll}, {@code @DenyAll} or
 * {@code @Authenticated}, on itself or its class. The service denies unannotated endpoints at run time anyway
 * ({@code quarkus.security.jaxrs.deny-unannotated-endpoints}); this finds them before a caller gets a 403.
 */
public final class RestAuthorizationScan {

    private static final Set<String> HTTP_METHODS = Set.of("jakarta.ws.rs.GET", "jakarta.ws.rs.POST",
            "jakarta.ws.rs.PUT", "jakarta.ws.rs.DELETE", "jakarta.ws.rs.PATCH", "jakarta.ws.rs.HEAD");
    private static final Set<String> DECISIONS = Set.of("jakarta.annotation.security.RolesAllowed",
            "jakarta.annotation.security.PermitAll", "jakarta.annotation.security.DenyAll",
            "io.quarkus.security.Authenticated");

    private RestAuthorizationScan() {
    }

    /** The resource classes (with {@code @Path}) among the compiled classes of {@code anchor}'s code source. */
    public static List<Class<?>> resourceClasses(Class<?> anchor, String packagePrefix) {
        try {
            Path root = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
            List<Class<?>> found = new ArrayList<>();
            try (Stream<Path> files = Files.walk(root)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                    String name = root.relativize(file).toString().replace('/', '.').replaceAll("\\.class$", "");
                    if (!name.startsWith(packagePrefix)) {
                        continue;
                    }
                    Class<?> type = Class.forName(name, false, anchor.getClassLoader());
                    if (has(type.getAnnotations(), Set.of("jakarta.ws.rs.Path"))) {
                        found.add(type);
                    }
                }
            }
            return found;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException | ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    /** "Class.method" of every resource method that names no authorization decision. */
    public static List<String> unannotated(List<Class<?>> resources) {
        List<String> missing = new ArrayList<>();
        for (Class<?> type : resources) {
            boolean classDecides = has(type.getAnnotations(), DECISIONS);
            for (Method method : type.getDeclaredMethods()) {
                if (Modifier.isPublic(method.getModifiers()) && has(method.getAnnotations(), HTTP_METHODS)
                        && !classDecides && !has(method.getAnnotations(), DECISIONS)) {
                    missing.add(type.getSimpleName() + "." + method.getName());
                }
            }
        }
        return missing;
    }

    private static boolean has(Annotation[] annotations, Set<String> names) {
        return Arrays.stream(annotations).anyMatch(a -> names.contains(a.annotationType().getName()));
    }
}
