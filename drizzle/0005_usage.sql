CREATE TABLE "usage_entries" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"resource_id" text NOT NULL,
	"source_id" text NOT NULL,
	"kind" text NOT NULL,
	"plan" text NOT NULL,
	"quantity" double precision NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "usage_entries_source_key" ON "usage_entries" USING btree ("source_id","kind","started_at");--> statement-breakpoint
CREATE INDEX "usage_entries_workspace_idx" ON "usage_entries" USING btree ("workspace_id","ended_at");