package io.csiorchestrator.events;

import java.util.Arrays;
import java.util.stream.Collectors;

/** An enum constant with a fixed lower-kebab-case spelling on the wire. */
public interface WireValue {

    String wire();

    /**
     * The constant of {@code type} spelled {@code value} on the wire; an unknown spelling is an
     * {@link IllegalArgumentException} that lists the allowed ones.
     */
    static <E extends Enum<E> & WireValue> E parse(Class<E> type, String value) {
        for (E constant : type.getEnumConstants()) {
            if (constant.wire().equals(value)) {
                return constant;
            }
        }
        throw new IllegalArgumentException(Violation.quote(value) + " is not one of "
                + Arrays.stream(type.getEnumConstants()).map(WireValue::wire).collect(Collectors.joining(", ")));
    }
}
