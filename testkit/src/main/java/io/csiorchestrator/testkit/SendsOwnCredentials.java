package io.csiorchestrator.testkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * On a service's test class: its REST calls carry the credentials each one names (or none), instead of the
 * admin token the services' tests send by default ({@link TestTokens#admin()}). For the security tests.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface SendsOwnCredentials {
}
