CREATE TABLE "jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"service_id" text NOT NULL,
	"workspace_id" text NOT NULL,
	"deploy_id" text NOT NULL,
	"start_command" text NOT NULL,
	"plan" text NOT NULL,
	"status" text NOT NULL,
	"exit_code" integer,
	"failure_reason" text,
	"created_by" text,
	"canceled_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "kind" text DEFAULT 'instance' NOT NULL;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "plan" text;--> statement-breakpoint
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "jobs_service_idx" ON "jobs" USING btree ("service_id","id");--> statement-breakpoint
CREATE INDEX "jobs_status_idx" ON "jobs" USING btree ("status");--> statement-breakpoint
CREATE INDEX "jobs_workspace_status_idx" ON "jobs" USING btree ("workspace_id","status");