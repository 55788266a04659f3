ALTER TABLE "customers" ADD COLUMN "consent_text" text;--> statement-breakpoint
ALTER TABLE "customers" ADD COLUMN "notification_email" text;--> statement-breakpoint
ALTER TABLE "customers" ADD COLUMN "sender_notifications" boolean DEFAULT true NOT NULL;