CREATE TABLE "log_offsets" (
	"stream" text PRIMARY KEY NOT NULL,
	"offset" bigint NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "logs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"resource_id" text NOT NULL,
	"instance_id" text,
	"deploy_id" text,
	"type" text NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"method" text,
	"path" text,
	"status_code" integer,
	"host" text,
	"duration_ms" double precision,
	"bytes" bigint,
	"timestamp" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "metric_samples" (
	"service_id" text NOT NULL,
	"instance_id" text NOT NULL,
	"resolution" integer DEFAULT 0 NOT NULL,
	"timestamp" timestamp with time zone NOT NULL,
	"cpu_percent" double precision NOT NULL,
	"cpu_max" double precision,
	"cpu_min" double precision,
	"memory_bytes" bigint NOT NULL,
	"memory_max" bigint,
	"memory_min" bigint,
	"cgroup_memory_bytes" bigint,
	CONSTRAINT "metric_samples_instance_id_resolution_timestamp_pk" PRIMARY KEY("instance_id","resolution","timestamp")
);
--> statement-breakpoint
CREATE INDEX "logs_resource_time_idx" ON "logs" USING btree ("resource_id","timestamp","id");--> statement-breakpoint
CREATE INDEX "logs_workspace_time_idx" ON "logs" USING btree ("workspace_id","timestamp","id");--> statement-breakpoint
CREATE INDEX "logs_time_idx" ON "logs" USING btree ("timestamp");--> statement-breakpoint
CREATE INDEX "metric_samples_service_idx" ON "metric_samples" USING btree ("service_id","resolution","timestamp");