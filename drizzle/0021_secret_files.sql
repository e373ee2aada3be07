CREATE TABLE "env_group_secret_files" (
	"group_id" text NOT NULL,
	"name" text NOT NULL,
	"sealed_content" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "env_group_secret_files_group_id_name_pk" PRIMARY KEY("group_id","name")
);
--> statement-breakpoint
CREATE TABLE "secret_files" (
	"service_id" text NOT NULL,
	"name" text NOT NULL,
	"sealed_content" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "secret_files_service_id_name_pk" PRIMARY KEY("service_id","name")
);
--> statement-breakpoint
ALTER TABLE "env_group_secret_files" ADD CONSTRAINT "env_group_secret_files_group_id_env_groups_id_fk" FOREIGN KEY ("group_id") REFERENCES "public"."env_groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "secret_files" ADD CONSTRAINT "secret_files_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;