package io.csiorchestrator.claims.api;

import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The namespaces a bearer token may touch, from its {@code namespaces} claim: a list of names, {@code "*"} for
 * every one. A token without the claim touches none (fail closed: {@code ./csi token issue} always writes it).
 * Checked on every namespace an operation reads or writes: the path's and each object's in the body
 * (Nomad's CVE-2024-10975 checked only the request's).
 */
public record NamespaceGrant(Set<String> namespaces) {

    public static final String ALL = "*";

    public static NamespaceGrant of(Collection<String> claim) {
        return new NamespaceGrant(claim == null ? Set.of() : Set.copyOf(claim));
    }

    public boolean all() {
        return namespaces.contains(ALL);
    }

    public boolean allows(String namespace) {
        return all() || namespaces.contains(namespace);
    }

    /** Those of {@code wanted} this grant does not allow, sorted (empty: all allowed). */
    public List<String> refused(Collection<String> wanted) {
        return new TreeSet<>(wanted.stream().filter(ns -> !allows(ns)).toList()).stream().toList();
    }
}
