CREATE TABLE "deploys" (
	"id" text PRIMARY KEY NOT NULL,
	"service_id" text NOT NULL,
	"status" text NOT NULL,
	"trigger" text NOT NULL,
	"source_id" text,
	"artifact_of" text,
	"commit_id" text,
	"commit_message" text,
	"clear_cache" boolean DEFAULT false NOT NULL,
	"start_command" text,
	"build_output" text,
	"failure_reason" text,
	"artifact_deleted" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "env_vars" (
	"service_id" text NOT NULL,
	"key" text NOT NULL,
	"sealed_value" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "env_vars_service_id_key_pk" PRIMARY KEY("service_id","key")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"service_id" text,
	"deploy_id" text,
	"type" text NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "instances" (
	"id" text PRIMARY KEY NOT NULL,
	"service_id" text NOT NULL,
	"deploy_id" text NOT NULL,
	"status" text NOT NULL,
	"pid" integer,
	"start_time" text,
	"port" integer,
	"restarts" integer DEFAULT 0 NOT NULL,
	"started_at" timestamp with time zone,
	"stopped_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "services" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"type" text NOT NULL,
	"repo" text,
	"branch" text,
	"root_dir" text DEFAULT '' NOT NULL,
	"auto_deploy" text NOT NULL,
	"environment_id" text,
	"details" jsonb NOT NULL,
	"suspenders" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"live_deploy_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sources" (
	"id" text PRIMARY KEY NOT NULL,
	"service_id" text NOT NULL,
	"sha256" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deploys" ADD CONSTRAINT "deploys_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "env_vars" ADD CONSTRAINT "env_vars_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "instances" ADD CONSTRAINT "instances_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "services" ADD CONSTRAINT "services_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sources" ADD CONSTRAINT "sources_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "deploys_service_idx" ON "deploys" USING btree ("service_id","id");--> statement-breakpoint
CREATE INDEX "deploys_status_idx" ON "deploys" USING btree ("status");--> statement-breakpoint
CREATE INDEX "events_service_idx" ON "events" USING btree ("service_id","id");--> statement-breakpoint
CREATE INDEX "events_workspace_idx" ON "events" USING btree ("workspace_id","id");--> statement-breakpoint
CREATE INDEX "instances_service_idx" ON "instances" USING btree ("service_id");--> statement-breakpoint
CREATE INDEX "instances_status_idx" ON "instances" USING btree ("status");--> statement-breakpoint
CREATE UNIQUE INDEX "services_slug_key" ON "services" USING btree ("slug");--> statement-breakpoint
CREATE UNIQUE INDEX "services_workspace_name_key" ON "services" USING btree ("workspace_id","name");--> statement-breakpoint
CREATE INDEX "services_workspace_idx" ON "services" USING btree ("workspace_id","id");--> statement-breakpoint
CREATE INDEX "sources_service_idx" ON "sources" USING btree ("service_id","id");