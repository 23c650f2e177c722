package io.csiorchestrator.claims.store;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import jakarta.persistence.AttributeConverter;
import jakarta.persistence.Converter;

/**
 * A claim's enum columns as the REST paths' Hibernate reads map them: the column holds the contract's wire value
 * ({@code read}, {@code single-node-writer}, {@code file-system}), a PostgreSQL enum type of those values. A claim
 * transaction maps them itself ({@link ClaimTables}).
 */
public final class WireColumns {

    private WireColumns() {
    }

    @Converter
    public static class ClaimModeColumn implements AttributeConverter<ClaimMode, String> {
        @Override
        public String convertToDatabaseColumn(ClaimMode value) {
            return value == null ? null : value.wire();
        }

        @Override
        public ClaimMode convertToEntityAttribute(String column) {
            return column == null ? null : ClaimMode.fromWire(column);
        }
    }

    @Converter
    public static class AccessModeColumn implements AttributeConverter<AccessMode, String> {
        @Override
        public String convertToDatabaseColumn(AccessMode value) {
            return value == null ? null : value.wire();
        }

        @Override
        public AccessMode convertToEntityAttribute(String column) {
            return column == null ? null : AccessMode.fromWire(column);
        }
    }

    @Converter
    public static class AttachmentModeColumn implements AttributeConverter<AttachmentMode, String> {
        @Override
        public String convertToDatabaseColumn(AttachmentMode value) {
            return value == null ? null : value.wire();
        }

        @Override
        public AttachmentMode convertToEntityAttribute(String column) {
            return column == null ? null : AttachmentMode.fromWire(column);
        }
    }
}
