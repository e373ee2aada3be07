CREATE TABLE "disk_snapshots" (
	"id" text PRIMARY KEY NOT NULL,
	"disk_id" text NOT NULL,
	"kind" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "disks" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"service_id" text NOT NULL,
	"name" text NOT NULL,
	"size_gb" integer NOT NULL,
	"mount_path" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "disk_snapshots" ADD CONSTRAINT "disk_snapshots_disk_id_disks_id_fk" FOREIGN KEY ("disk_id") REFERENCES "public"."disks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "disks" ADD CONSTRAINT "disks_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "disks" ADD CONSTRAINT "disks_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "disk_snapshots_disk_idx" ON "disk_snapshots" USING btree ("disk_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "disks_service_key" ON "disks" USING btree ("service_id");--> statement-breakpoint
CREATE INDEX "disks_workspace_idx" ON "disks" USING btree ("workspace_id","id");