package io.csiorchestrator.claims.api;

import java.util.ArrayList;
import java.util.List;
import org.eclipse.microprofile.jwt.JsonWebToken;

/** Reads a bearer token's grants (its {@code namespaces} claim) for the REST resources. */
public final class TokenGrants {

    private TokenGrants() {
    }

    /** The namespaces {@code token} may touch; none when it has no {@code namespaces} claim (fail closed). */
    public static NamespaceGrant namespaces(JsonWebToken token) {
        Object claim = token == null ? null : token.getClaim("namespaces");
        List<String> names = new ArrayList<>();
        if (claim instanceof jakarta.json.JsonArray array) {
            array.forEach(value -> names.add(value instanceof jakarta.json.JsonString s ? s.getString() : value.toString()));
        } else if (claim instanceof jakarta.json.JsonString s) {
            names.add(s.getString());
        } else if (claim instanceof java.util.Collection<?> values) {
            values.forEach(value -> names.add(String.valueOf(value)));
        } else if (claim instanceof String s) {
            names.add(s);
        }
        return NamespaceGrant.of(names);
    }
}
