package io.csiorchestrator.claims.store;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import jakarta.persistence.AttributeConverter;
import io.csiorchestrator.events.WireValue;
import jakarta.persistence.Converter;
import java.util.function.Function;

/**
 * A claim's enum columns as the REST paths' Hibernate reads map them: the column holds the contract's wire value
 * ({@code read}, {@code single-node-writer}, {@code file-system}), a PostgreSQL enum type of those values. A claim
 * transaction maps them itself ({@link ClaimTables}).
 */
public final class WireColumns {

    private WireColumns() {
    }

    /** A column of an enum of the contract, holding its wire value. */
    abstract static class WireColumn<E extends WireValue> implements AttributeConverter<E, String> {
        private final Function<String, E> parse;

        WireColumn(Function<String, E> parse) {
            this.parse = parse;
        }

        @Override
        public String convertToDatabaseColumn(E value) {
            return value == null ? null : value.wire();
        }

        @Override
        public E convertToEntityAttribute(String column) {
            return column == null ? null : parse.apply(column);
        }
    }

    @Converter
    public static class ClaimModeColumn extends WireColumn<ClaimMode> {
        public ClaimModeColumn() {
            super(ClaimMode::fromWire);
        }
    }

    @Converter
    public static class AccessModeColumn extends WireColumn<AccessMode> {
        public AccessModeColumn() {
            super(AccessMode::fromWire);
        }
    }

    @Converter
    public static class AttachmentModeColumn extends WireColumn<AttachmentMode> {
        public AttachmentModeColumn() {
            super(AttachmentMode::fromWire);
        }
    }
}
