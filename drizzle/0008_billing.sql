CREATE TABLE "billing_accounts" (
	"workspace_id" text PRIMARY KEY NOT NULL,
	"customer_id" text NOT NULL,
	"subscription_id" text,
	"subscription_status" text,
	"price_id" text,
	"current_period_end" timestamp with time zone,
	"state_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "billing_accounts_customer_id_unique" UNIQUE("customer_id")
);
--> statement-breakpoint
CREATE TABLE "billing_meter_reports" (
	"workspace_id" text NOT NULL,
	"period_start" timestamp with time zone NOT NULL,
	"resource_key" text NOT NULL,
	"identifier" text NOT NULL,
	"value" integer NOT NULL,
	"status" text NOT NULL,
	"reported_at" timestamp with time zone,
	CONSTRAINT "billing_meter_reports_workspace_id_period_start_resource_key_pk" PRIMARY KEY("workspace_id","period_start","resource_key"),
	CONSTRAINT "billing_meter_reports_identifier_unique" UNIQUE("identifier")
);
--> statement-breakpoint
CREATE TABLE "billing_stripe_events" (
	"id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "billing_accounts" ADD CONSTRAINT "billing_accounts_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_meter_reports" ADD CONSTRAINT "billing_meter_reports_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "billing_meter_reports_pending_idx" ON "billing_meter_reports" USING btree ("status");