CREATE TABLE "postgres_exports" (
	"id" text PRIMARY KEY NOT NULL,
	"datastore_id" text NOT NULL,
	"status" text NOT NULL,
	"size_bytes" bigint,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "postgres_exports" ADD CONSTRAINT "postgres_exports_datastore_id_datastores_id_fk" FOREIGN KEY ("datastore_id") REFERENCES "public"."datastores"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "postgres_exports_datastore_idx" ON "postgres_exports" USING btree ("datastore_id","id");--> statement-breakpoint
CREATE INDEX "postgres_exports_expiry_idx" ON "postgres_exports" USING btree ("expires_at");