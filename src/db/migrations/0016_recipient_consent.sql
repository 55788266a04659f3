ALTER TABLE "engine_recipients" ADD COLUMN "consented_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "consent_ip" text;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "consent_user_agent" text;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "consent_text_sha256" text;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "time_zone" text;--> statement-breakpoint
ALTER TABLE "envelope_recipients" ADD COLUMN "consented_at" timestamp with time zone;