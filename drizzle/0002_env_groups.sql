CREATE TABLE "env_group_links" (
	"group_id" text NOT NULL,
	"service_id" text NOT NULL,
	"linked_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "env_group_links_group_id_service_id_pk" PRIMARY KEY("group_id","service_id")
);
--> statement-breakpoint
CREATE TABLE "env_group_vars" (
	"group_id" text NOT NULL,
	"key" text NOT NULL,
	"sealed_value" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "env_group_vars_group_id_key_pk" PRIMARY KEY("group_id","key")
);
--> statement-breakpoint
CREATE TABLE "env_groups" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"environment_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "env_group_links" ADD CONSTRAINT "env_group_links_group_id_env_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."env_groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "env_group_links" ADD CONSTRAINT "env_group_links_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "env_group_vars" ADD CONSTRAINT "env_group_vars_group_id_env_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."env_groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "env_groups" ADD CONSTRAINT "env_groups_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "env_group_links_service_idx" ON "env_group_links" USING btree ("service_id");--> statement-breakpoint
CREATE UNIQUE INDEX "env_groups_workspace_name_key" ON "env_groups" USING btree ("workspace_id","name");--> statement-breakpoint
CREATE INDEX "env_groups_workspace_idx" ON "env_groups" USING btree ("workspace_id","id");