CREATE TABLE "usage_daily" (
	"workspace_id" text NOT NULL,
	"day" timestamp with time zone NOT NULL,
	"resource_id" text NOT NULL,
	"kind" text NOT NULL,
	"plan" text NOT NULL,
	"quantity" double precision NOT NULL,
	CONSTRAINT "usage_daily_workspace_id_day_resource_id_kind_plan_pk" PRIMARY KEY("workspace_id","day","resource_id","kind","plan")
);
--> statement-breakpoint
CREATE TABLE "usage_hourly" (
	"workspace_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"resource_id" text NOT NULL,
	"kind" text NOT NULL,
	"plan" text NOT NULL,
	"quantity" double precision NOT NULL,
	CONSTRAINT "usage_hourly_workspace_id_hour_resource_id_kind_plan_pk" PRIMARY KEY("workspace_id","hour","resource_id","kind","plan")
);
--> statement-breakpoint
CREATE TABLE "usage_rollups" (
	"name" text PRIMARY KEY NOT NULL,
	"last_id" bigint NOT NULL
);
