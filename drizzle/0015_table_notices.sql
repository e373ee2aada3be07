-- Cached list pages (src/core/read-cache.ts) are dropped when a table they read changes: every statement that
-- writes one of these tables NOTIFYs its name on slipway_tables, whoever runs it. Postgres delivers it at commit,
-- once per transaction and table.
CREATE FUNCTION "slipway_table_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('slipway_tables', TG_TABLE_NAME);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "services_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "services"
  FOR EACH STATEMENT EXECUTE FUNCTION "slipway_table_changed"();
--> statement-breakpoint
CREATE TRIGGER "deploys_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "deploys"
  FOR EACH STATEMENT EXECUTE FUNCTION "slipway_table_changed"();
--> statement-breakpoint
CREATE TRIGGER "audit_logs_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "audit_logs"
  FOR EACH STATEMENT EXECUTE FUNCTION "slipway_table_changed"();
--> statement-breakpoint
CREATE TRIGGER "blueprint_resources_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "blueprint_resources"
  FOR EACH STATEMENT EXECUTE FUNCTION "slipway_table_changed"();
--> statement-breakpoint
CREATE TRIGGER "blueprints_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "blueprints"
  FOR EACH STATEMENT EXECUTE FUNCTION "slipway_table_changed"();
