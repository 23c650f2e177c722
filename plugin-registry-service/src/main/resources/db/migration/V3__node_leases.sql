-- Node leases (issue 19): one row per node, written when an epoch begins (a grant after none, a lapse or a fence),
-- when it lapses and when the node reports it fenced. Renewals live in memory only (no write per renewal).
create table node_leases (
    node_id         text        primary key,
    epoch           bigint      not null check (epoch >= 1),
    state           text        not null check (state in ('valid', 'lapsed', 'fenced')),
    last_renewed_at timestamptz not null,
    fenced_epoch    bigint      not null default 0
);
