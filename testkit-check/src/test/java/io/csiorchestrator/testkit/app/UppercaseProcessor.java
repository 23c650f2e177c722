package io.csiorchestrator.testkit.app;

import java.nio.charset.StandardCharsets;

import jakarta.enterprise.context.ApplicationScoped;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.eclipse.microprofile.reactive.messaging.Incoming;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.eclipse.microprofile.reactive.messaging.Outgoing;

import io.smallrye.reactive.messaging.kafka.api.IncomingKafkaRecordMetadata;
import io.smallrye.reactive.messaging.kafka.api.OutgoingKafkaRecordMetadata;

/** Test-only app bean: reads testkit-upper-in, writes the upper-cased value to testkit-upper-out, same key and ce_type. */
@ApplicationScoped
public class UppercaseProcessor {

    @Incoming("upper-in")
    @Outgoing("upper-out")
    public Message<String> upper(Message<String> message) {
        IncomingKafkaRecordMetadata<?, ?> in = message.getMetadata(IncomingKafkaRecordMetadata.class).orElseThrow();
        Header type = in.getHeaders().lastHeader("ce_type");
        RecordHeaders headers = new RecordHeaders();
        if (type != null) {
            headers.add("ce_type", type.value());
        }
        headers.add("processed-by", "uppercase".getBytes(StandardCharsets.UTF_8));
        OutgoingKafkaRecordMetadata<Object> out = OutgoingKafkaRecordMetadata.builder()
            .withKey(in.getKey())
            .withHeaders(headers)
            .build();
        return message.withPayload(message.getPayload().toUpperCase()).addMetadata(out);
    }
}
