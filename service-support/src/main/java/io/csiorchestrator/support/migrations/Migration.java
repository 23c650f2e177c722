package io.csiorchestrator.support.migrations;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32;

/**
 * One versioned SQL migration, named as Flyway names them: {@code V<version>__<description>.sql}, the version's parts
 * separated by {@code _} or {@code .} ({@code V3_19_1__storage_fence.sql} is version {@code 3.19.1}, description
 * {@code storage fence}). Pure: no database, no framework.
 *
 * @param version     the version as Flyway writes it in its history ({@code 3.19.1})
 * @param description the description as Flyway writes it (underscores as spaces)
 * @param script      the file name
 * @param checksum    Flyway's checksum of the script ({@link #checksumOf})
 * @param sql         the script
 */
public record Migration(String version, String description, String script, int checksum, String sql)
        implements Comparable<Migration> {

    private static final Pattern NAME = Pattern.compile("V([0-9]+(?:[._][0-9]+)*)__(.+)\\.sql");

    /**
     * The migration of the script {@code script} with the text {@code sql}; throws {@link IllegalArgumentException}
     * naming the script when its name is not {@code V<version>__<description>.sql}.
     */
    public static Migration of(String script, String sql) {
        Matcher m = NAME.matcher(script);
        if (!m.matches()) {
            throw new IllegalArgumentException("migration script '" + script
                    + "' is not named V<version>__<description>.sql (e.g. V3_19_1__storage_fence.sql)");
        }
        String version = m.group(1).replace('_', '.');
        return new Migration(version, m.group(2).replace('_', ' '), script, checksumOf(sql), sql);
    }

    /**
     * Flyway's checksum of a script, so that a history Flyway wrote validates here and the other way round: the
     * CRC-32 of the UTF-8 bytes of each line without its line break (a byte order mark before the first line left
     * out), as a signed 32-bit integer.
     */
    public static int checksumOf(String sql) {
        CRC32 crc = new CRC32();
        String text = sql.startsWith("\uFEFF") ? sql.substring(1) : sql;
        try (BufferedReader lines = new BufferedReader(new StringReader(text))) {
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                crc.update(line.getBytes(StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new IllegalStateException(e); // a StringReader does not fail
        }
        return (int) crc.getValue();
    }

    /** The version's parts as numbers ({@code 3.19.1} is 3, 19, 1), compared part by part as Flyway does. */
    public List<BigInteger> versionParts() {
        return partsOf(version);
    }

    static List<BigInteger> partsOf(String version) {
        List<BigInteger> parts = new ArrayList<>();
        for (String part : version.split("\\.")) {
            parts.add(new BigInteger(part));
        }
        // 1.0 and 1 are the same version: trailing zeros do not count
        while (parts.size() > 1 && parts.get(parts.size() - 1).signum() == 0) {
            parts.remove(parts.size() - 1);
        }
        return Collections.unmodifiableList(parts);
    }

    /** Compares two versions as Flyway does (part by part, numerically, a missing part counting as 0). */
    public static int compareVersions(String a, String b) {
        List<BigInteger> left = partsOf(a);
        List<BigInteger> right = partsOf(b);
        for (int i = 0; i < Math.max(left.size(), right.size()); i++) {
            BigInteger l = i < left.size() ? left.get(i) : BigInteger.ZERO;
            BigInteger r = i < right.size() ? right.get(i) : BigInteger.ZERO;
            int c = l.compareTo(r);
            if (c != 0) {
                return c;
            }
        }
        return 0;
    }

    @Override
    public int compareTo(Migration other) {
        return compareVersions(version, other.version);
    }
}
