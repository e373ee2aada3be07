CREATE TABLE "deleted_datastores" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"row" jsonb NOT NULL,
	"deleted_at" timestamp with time zone DEFAULT now() NOT NULL,
	"backups_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deleted_datastores" ADD CONSTRAINT "deleted_datastores_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "deleted_datastores_until_idx" ON "deleted_datastores" USING btree ("backups_until");