-- Before this migration environment ids were stored unchecked and no environment existed: clear them so the foreign keys can hold.
UPDATE "services" SET "environment_id" = NULL WHERE "environment_id" IS NOT NULL;--> statement-breakpoint
UPDATE "env_groups" SET "environment_id" = NULL WHERE "environment_id" IS NOT NULL;--> statement-breakpoint
CREATE TABLE "datastores" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"plan" text NOT NULL,
	"version" text NOT NULL,
	"environment_id" text,
	"provisioner" text NOT NULL,
	"status" text NOT NULL,
	"suspended" boolean DEFAULT false NOT NULL,
	"database_name" text,
	"database_user" text,
	"sealed_password" text NOT NULL,
	"maxmemory_policy" text,
	"ip_allow_list" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"host" text,
	"port" integer,
	"provisioner_state" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "environments" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"protected_status" text DEFAULT 'unprotected' NOT NULL,
	"network_isolation_enabled" boolean DEFAULT false NOT NULL,
	"ip_allow_list" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "env_group_vars" ADD COLUMN "ref" jsonb;--> statement-breakpoint
ALTER TABLE "env_vars" ADD COLUMN "ref" jsonb;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "datastore_id" text;--> statement-breakpoint
ALTER TABLE "datastores" ADD CONSTRAINT "datastores_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "datastores" ADD CONSTRAINT "datastores_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "environments" ADD CONSTRAINT "environments_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "environments" ADD CONSTRAINT "environments_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "datastores_workspace_idx" ON "datastores" USING btree ("workspace_id","kind","id");--> statement-breakpoint
CREATE INDEX "datastores_status_idx" ON "datastores" USING btree ("status");--> statement-breakpoint
CREATE INDEX "datastores_environment_idx" ON "datastores" USING btree ("environment_id");--> statement-breakpoint
CREATE UNIQUE INDEX "environments_project_name_key" ON "environments" USING btree ("project_id","name");--> statement-breakpoint
CREATE INDEX "environments_workspace_idx" ON "environments" USING btree ("workspace_id","id");--> statement-breakpoint
CREATE INDEX "projects_workspace_idx" ON "projects" USING btree ("workspace_id","id");--> statement-breakpoint
ALTER TABLE "env_groups" ADD CONSTRAINT "env_groups_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "services" ADD CONSTRAINT "services_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "env_groups_environment_idx" ON "env_groups" USING btree ("environment_id");--> statement-breakpoint
CREATE INDEX "events_datastore_idx" ON "events" USING btree ("datastore_id","id");--> statement-breakpoint
CREATE INDEX "services_environment_idx" ON "services" USING btree ("environment_id");