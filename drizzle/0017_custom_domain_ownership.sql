-- Custom domains are unique per workspace, and verified in one workspace at most (README, "Custom domains").
-- Existing rows take their service's workspace.
DROP INDEX "custom_domains_name_key";--> statement-breakpoint
ALTER TABLE "custom_domains" ADD COLUMN "workspace_id" text;--> statement-breakpoint
UPDATE "custom_domains" SET "workspace_id" = "services"."workspace_id" FROM "services" WHERE "services"."id" = "custom_domains"."service_id";--> statement-breakpoint
ALTER TABLE "custom_domains" ALTER COLUMN "workspace_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "custom_domains" ADD COLUMN "unverified_reason" text;--> statement-breakpoint
ALTER TABLE "custom_domains" ADD CONSTRAINT "custom_domains_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "custom_domains_workspace_name_key" ON "custom_domains" USING btree ("workspace_id","name");--> statement-breakpoint
CREATE UNIQUE INDEX "custom_domains_verified_name_key" ON "custom_domains" USING btree ("name") WHERE "custom_domains"."verification_status" = 'verified';
