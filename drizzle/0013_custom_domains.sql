CREATE TABLE "custom_domains" (
	"id" text PRIMARY KEY NOT NULL,
	"service_id" text NOT NULL,
	"name" text NOT NULL,
	"domain_type" text NOT NULL,
	"public_suffix" text NOT NULL,
	"redirect_for_name" text,
	"verification_status" text DEFAULT 'unverified' NOT NULL,
	"verified_at" timestamp with time zone,
	"next_check_at" timestamp with time zone DEFAULT now() NOT NULL,
	"failed_checks" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "custom_domains" ADD CONSTRAINT "custom_domains_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "custom_domains_name_key" ON "custom_domains" USING btree ("name");--> statement-breakpoint
CREATE INDEX "custom_domains_service_idx" ON "custom_domains" USING btree ("service_id","id");--> statement-breakpoint
CREATE INDEX "custom_domains_next_check_idx" ON "custom_domains" USING btree ("next_check_at");