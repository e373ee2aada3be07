CREATE TABLE "blueprint_resources" (
	"resource_id" text PRIMARY KEY NOT NULL,
	"blueprint_id" text NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "blueprint_syncs" (
	"id" text PRIMARY KEY NOT NULL,
	"blueprint_id" text NOT NULL,
	"state" text DEFAULT 'running' NOT NULL,
	"commit_id" text,
	"error" text,
	"results" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "blueprints" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text DEFAULT 'created' NOT NULL,
	"auto_sync" boolean DEFAULT true NOT NULL,
	"repo" text,
	"branch" text,
	"path" text DEFAULT 'render.yaml' NOT NULL,
	"archive_id" text,
	"archive_sha256" text,
	"last_sync_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "blueprint_resources" ADD CONSTRAINT "blueprint_resources_blueprint_id_blueprints_id_fk" FOREIGN KEY ("blueprint_id") REFERENCES "public"."blueprints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "blueprint_syncs" ADD CONSTRAINT "blueprint_syncs_blueprint_id_blueprints_id_fk" FOREIGN KEY ("blueprint_id") REFERENCES "public"."blueprints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "blueprints" ADD CONSTRAINT "blueprints_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "blueprint_resources_blueprint_idx" ON "blueprint_resources" USING btree ("blueprint_id");--> statement-breakpoint
CREATE INDEX "blueprint_syncs_blueprint_idx" ON "blueprint_syncs" USING btree ("blueprint_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "blueprint_syncs_running_key" ON "blueprint_syncs" USING btree ("blueprint_id") WHERE state = 'running';--> statement-breakpoint
CREATE UNIQUE INDEX "blueprints_workspace_name_key" ON "blueprints" USING btree ("workspace_id","name");--> statement-breakpoint
CREATE INDEX "blueprints_workspace_idx" ON "blueprints" USING btree ("workspace_id","id");