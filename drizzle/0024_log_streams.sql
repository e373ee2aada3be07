CREATE TABLE "log_stream_overrides" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"resource_id" text NOT NULL,
	"setting" text NOT NULL,
	"endpoint" text,
	"sealed_token" text,
	"cursor" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "log_streams" (
	"workspace_id" text PRIMARY KEY NOT NULL,
	"endpoint" text,
	"sealed_token" text,
	"preview" text NOT NULL,
	"cursor" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "log_stream_overrides" ADD CONSTRAINT "log_stream_overrides_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "log_streams" ADD CONSTRAINT "log_streams_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "log_stream_overrides_resource_key" ON "log_stream_overrides" USING btree ("resource_id");--> statement-breakpoint
CREATE INDEX "log_stream_overrides_workspace_idx" ON "log_stream_overrides" USING btree ("workspace_id","id");