package io.csiorchestrator.testkit.app;

import jakarta.persistence.Entity;

import io.quarkus.hibernate.reactive.panache.PanacheEntity;

/** Test-only entity for the Hibernate Reactive test. */
@Entity
public class Note extends PanacheEntity {

    public String text;
}
