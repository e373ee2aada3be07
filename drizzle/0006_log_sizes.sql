CREATE TABLE "log_sizes" (
	"resource_id" text PRIMARY KEY NOT NULL,
	"bytes" bigint NOT NULL
);
--> statement-breakpoint
INSERT INTO "log_sizes" ("resource_id", "bytes") SELECT "resource_id", sum(octet_length("message")) FROM "logs" GROUP BY "resource_id";
