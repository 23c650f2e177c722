-- Which status of a plugin has reached plugin-status: every change bumps status_version; the publisher
-- records the version it published. A plugin whose published_version lags (the service stopped between the
-- commit and the publication) is published again by the sweep. A removed plugin keeps its row, marked
-- removed, until its tombstone is published.
alter table plugin add column status_version    bigint  not null default 0;
alter table plugin add column published_version bigint  not null default 0;
alter table plugin add column removed           boolean not null default false;

create index plugin_publication_pending on plugin (id) where published_version < status_version;
